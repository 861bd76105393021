package nsmantest

import (
	"os"
	"testing"
	"time"
)

// Long reports whether NSMAN_LONG=1 asks for the long variants of the
// robustness tests: more managers, sweeps, kill points and fault rounds,
// for minutes rather than seconds (make test-long).
func Long() bool { return os.Getenv("NSMAN_LONG") == "1" }

// Scale is short, or long under NSMAN_LONG=1.
func Scale(short, long int) int {
	if Long() {
		return long
	}
	return short
}

// Figures sum up a robustness test in one line of a fixed format, so that
// short and long runs compare at a glance: nsman sweeps run, faults
// injected (kills, spoilt requests, hostile inputs), destructive actions
// observed, and how many of those were duplicates.
type Figures struct {
	Runs, Faults, Actions, Duplicates int
	Began                             time.Time
}

// Log writes the figures line, failing the test on any duplicate.
func (f Figures) Log(t testing.TB) {
	t.Helper()
	if f.Duplicates > 0 {
		t.Errorf("%d actions applied more than once", f.Duplicates)
	}
	t.Logf("figures: runs=%d faults=%d actions=%d duplicates=%d took=%s", f.Runs, f.Faults, f.Actions, f.Duplicates, time.Since(f.Began).Round(time.Second))
}
