package integration

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nsman/nsman/sweep"
)

// --max-actions goes round-robin across the namespaces acted on, a rule's
// pairs by their namespace: a namespace of ten due managers, listed first,
// takes one place as the others do, and the rule, handled last, is not
// left without.
func TestMaxActionsAreSharedAcrossNamespaces(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	tenants := []string{shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)}
	slices.Sort(tenants) // the first is listed first
	many := tenants[0]
	deleteNow := []any{ttlPolicy("delete at once", 0, deleteAction)}
	for i := range 10 {
		createManager(t, managerObj(many, fmt.Sprintf("m%02d", i), caseID, deleteNow, func(spec map[string]any) { spec["namespace"] = many }))
	}
	for _, ns := range tenants[1:] {
		createManager(t, managerObj(ns, ns, caseID, deleteNow))
	}
	ruled := labelled(t, home, 2)
	createManager(t, managerObj(home, "rule", caseID, deleteNow, selecting(home)))
	namespaces := append(slices.Clone(tenants), ruled...)

	for sweepNo := range 2 {
		res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home, "--dry-run", "--max-actions", fmt.Sprint(len(namespaces)))
		wantCode(t, res, 0)
		planned := map[string]int{}
		for _, entry := range res.Report.Entries {
			if entry.State == sweep.StatePlanned {
				planned[entry.Target]++
			}
		}
		for _, ns := range namespaces {
			if planned[ns] != 1 {
				t.Errorf("sweep %d: %d action(s) planned in namespace %s, want 1 in each of %d namespaces (planned: %v)", sweepNo, planned[ns], ns, len(namespaces), planned)
			}
		}
		if got := res.Report.Summary.States; got[sweep.StateDeferred] != 10+2+2-len(namespaces) {
			t.Errorf("sweep %d: states %v, want %d deferred", sweepNo, got, 10+2+2-len(namespaces))
		}
		// Of one namespace's, the first by name, whatever the order they
		// were evaluated in.
		wantState(t, res, many, "m00", sweep.StatePlanned)
	}
}
