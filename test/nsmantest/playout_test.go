package nsmantest

import (
	"fmt"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
)

// reported is a testing.TB that keeps what Errorf reports.
type reported struct {
	testing.TB
	got []string
}

func (e *reported) Helper() {}

func (e *reported) Errorf(format string, args ...any) {
	e.got = append(e.got, fmt.Sprintf(format, args...))
}

// TestComparePlannedAllowsOnlyAClockASecondBehind checks that a planned
// action the sweep after it left waiting is an error unless that sweep's
// clock, read from whole seconds of the API server's Date, had not yet
// reached the due time the dry run's had: seen in CI, where a dry run
// planned an OWNER_GONE DELETE whose grace elapsed between its clock and
// the real sweep's.
func TestComparePlannedAllowsOnlyAClockASecondBehind(t *testing.T) {
	planNow := time.Date(2026, 12, 2, 9, 8, 40, 300_000_000, time.UTC)
	due := planNow.Add(-200 * time.Millisecond)
	planned := report.Entry{State: report.StatePlanned, Action: "DELETE", Policy: "p"}
	waiting := func(due time.Time) report.Entry {
		return report.Entry{State: report.StateWaiting, Due: &due, Message: "grace elapses"}
	}
	for _, c := range []struct {
		name    string
		r       report.Entry
		realNow time.Time
		wantErr bool
	}{
		{"fired as planned", report.Entry{State: report.StateFired, Action: "DELETE", Policy: "p"}, planNow.Add(time.Second), false},
		{"the sweep's clock behind the due time the dry run's passed", waiting(due), due.Add(-500 * time.Millisecond), false},
		{"waiting past its due time", waiting(due), due.Add(time.Millisecond), true},
		{"waiting on a later due time than the dry run's clock", waiting(planNow.Add(time.Second)), due.Add(-500 * time.Millisecond), true},
		{"the sweep's clock more than a second behind", waiting(due), planNow.Add(-time.Second), true},
		{"waiting with no due time", report.Entry{State: report.StateWaiting}, due.Add(-500 * time.Millisecond), true},
		{"not reported", report.Entry{}, planNow, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &reported{TB: t}
			ComparePlanned(e, "m", planned, c.r, planNow, c.realNow)
			if c.wantErr != (len(e.got) > 0) {
				t.Errorf("errors %q, want some: %v", e.got, c.wantErr)
			}
		})
	}
}
