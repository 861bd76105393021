package compat

import (
	"os"
	"testing"
	"time"

	"github.com/nsman/nsman/test/cluster"
)

// scale is shortN, or longN when NSMAN_LONG=1 asks for the long variants
// (see package robust).
func scale(shortN, longN int) int {
	if os.Getenv("NSMAN_LONG") == "1" {
		return longN
	}
	return shortN
}

// logFigures writes the one line that sums up a scaled test, in the format
// of package robust: nsman sweeps run, hostile inputs, destructive actions
// observed, and duplicates among them, which fail the test.
func logFigures(t *testing.T, runs, faults, actions, duplicates int, began time.Time) {
	t.Helper()
	if duplicates > 0 {
		t.Errorf("%d actions applied more than once", duplicates)
	}
	t.Logf("figures: runs=%d faults=%d actions=%d duplicates=%d took=%s", runs, faults, actions, duplicates, time.Since(began).Round(time.Second))
}

// namespaceDeletes counts the namespace deletes that succeeded among reqs,
// nsman's audited requests, by namespace.
func namespaceDeletes(reqs []cluster.Request) map[string]int {
	deletes := map[string]int{}
	for _, r := range reqs {
		if r.Verb == "delete" && r.Resource == "namespaces" && r.Code == 200 {
			deletes[r.Name]++
		}
	}
	return deletes
}

// actionsAndDuplicates sums a count by target: all actions, and those
// beyond the first on each target.
func actionsAndDuplicates(byTarget map[string]int) (actions, duplicates int) {
	for _, n := range byTarget {
		actions += n
		duplicates += max(n-1, 0)
	}
	return actions, duplicates
}
