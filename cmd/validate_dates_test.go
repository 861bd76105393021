package cmd

import (
	"strings"
	"testing"
	"time"
)

// holidayRule is a rule that sleeps on the dates given, as a manifest.
func holidayRule(dates string) string {
	return `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: holidays
  namespace: namespace-manager
spec:
  namePatterns: ["dev-*"]
  policies:
    - name: holidays
      condition:
        type: TTL
        params:
          ttlSeconds: 0
      windows:
        - dates: ` + dates + `
          timeZone: Europe/Berlin
      action:
        type: SLEEP
`
}

// TestValidateWindowDates: nsman validate refuses a window whose dates
// are all past at its clock, naming the last; admits one with a date to
// come; refuses a day the calendar does not have and an inverted range,
// at their index, whatever the clock.
func TestValidateWindowDates(t *testing.T) {
	christmas := time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		dates string
		now   time.Time
		want  string // the problem, "" for valid
	}{
		{"the holidays ahead", `["2026-12-24..2027-01-01"]`, christmas.AddDate(0, 0, -30), ""},
		{"in the holidays", `["2026-12-24..2027-01-01"]`, christmas, ""},
		{"after the holidays, the next ahead", `["2026-12-24..2027-01-01", "2027-12-24..2028-01-01"]`, christmas.AddDate(0, 1, 0), ""},
		{"after the holidays", `["2025-12-24..2026-01-01", "2026-12-24..2027-01-01"]`, christmas.AddDate(0, 1, 0),
			`spec.policies[0].windows[0].dates: Invalid value: "2027-01-01": every date is past at 2027-01-24T12:00:00Z: the window never opens again`},
		{"no such day", `["2027-02-29"]`, christmas,
			`spec.policies[0].windows[0].dates[0]: Invalid value: "2027-02-29": 2027-02-29 is no day of the calendar`},
		{"inverted", `["2026-12-24", "2027-01-01..2026-12-24"]`, christmas,
			`spec.policies[0].windows[0].dates[1]: Invalid value: "2027-01-01..2026-12-24": the range ends before it begins`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			report, err := validateManifests("holidays.yaml", strings.NewReader(holidayRule(tt.dates)), tt.now)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range report.invalid {
				for _, e := range m.errs {
					got = append(got, describeFieldError(e))
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("invalid: %q", got)
			case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.want)):
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
	// The command judges by its own clock: 2020 is past.
	dir := t.TempDir()
	writeTestFiles(t, dir, map[string]string{"old.yaml": holidayRule(`["2020-12-24..2021-01-01"]`)})
	t.Chdir(dir)
	code, stdout, _ := runValidate(t, "", "-f", "old.yaml")
	if code != ExitFailed || !strings.Contains(stdout, `old.yaml: namespace-manager/holidays: spec.policies[0].windows[0].dates: Invalid value: "2021-01-01": every date is past at `) {
		t.Errorf("exit %d, stdout %q; want the past window refused", code, stdout)
	}
}
