package printer

import "github.com/nsman/nsman/report"

// stateColors are the SGR colours of the states a person should see at a
// glance: green for what was done, red for what failed or cannot be done,
// yellow for what waits on something else, cyan for what a dry run would
// do, blue for asleep. The others print in the terminal's own colour.
var stateColors = map[report.State]string{
	report.StateFired:             "32",
	report.StateDone:              "32",
	report.StateFailed:            "31",
	report.StateInvalid:           "31",
	report.StateForbidden:         "31",
	report.StateDeferred:          "33",
	report.StateBusy:              "33",
	report.StateTargetTerminating: "33",
	report.StatePlanned:           "36",
	report.StateAsleep:            "34",
}

// colored is s in colour sgr ("" for the terminal's own) when color is
// set. Every cell of a column, its header's too, carries escapes of the
// same length, "\x1b[NNm" and "\x1b[0m", which the tabwriter counts as
// width: so the column stays aligned on the screen, where they take none.
func colored(s, sgr string, color bool) string {
	if !color {
		return s
	}
	if sgr == "" {
		sgr = "39" // the default foreground
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}
