package printer

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nsman/nsman/report"
)

// StateList names every state of report.States, comma-separated, as
// --state's help and its error say them.
var StateList = func() string {
	names := make([]string, len(report.States))
	for i, s := range report.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}()

// ParseStates reads what --state names, each a state of report.States
// (comma-separated, or repeated): the states of the entries Report
// prints. It refuses a state that is not one, naming them all.
func ParseStates(names []string) ([]report.State, error) {
	var states []report.State
	for _, name := range names {
		s := report.State(strings.TrimSpace(name))
		if !slices.Contains(report.States, s) {
			return nil, fmt.Errorf("--state %q: want one or more of %s", name, StateList)
		}
		states = append(states, s)
	}
	return states, nil
}

// inStates are the entries in one of states, in their order; entries
// itself is left as it was.
func inStates(entries []report.Entry, states []report.State) []report.Entry {
	var kept []report.Entry
	for _, e := range entries {
		if slices.Contains(states, e.State) {
			kept = append(kept, e)
		}
	}
	return kept
}

// writeLeftOut says, under the table, how many of all entries states left
// out: the counts above are the sweep's, all of them.
func writeLeftOut(w io.Writer, left, all int, states []report.State) error {
	if len(states) == 0 {
		return nil
	}
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	_, err := fmt.Fprintf(w, "%d of %d entries shown (--state %s), %d left out\n", all-left, all, strings.Join(names, ","), left)
	return err
}
