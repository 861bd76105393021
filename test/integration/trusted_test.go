package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// With its default flags, a sweep trusts the namespace it runs in and no
// other: a namespace named by a default need not exist, and whoever may
// create namespaces would create it and put a rule there. Here nsman runs
// in a namespace of its own, as a chart installed with -n nsman does;
// namespace-manager stands for the namespace a tenant created, and holds an
// enforced rule that would delete every namespace it matches.
func TestDefaultTrustsOnlyTheOwnNamespace(t *testing.T) {
	e := setup(t)
	own := shared.Namespace(t)
	t.Setenv("POD_NAMESPACE", own)
	caseID := own
	victims := labelled(t, caseID, 2)
	mine := labelled(t, caseID+"-own", 1)
	const foreign = nsmantest.ServiceAccountNamespace
	rule := "everything-" + own
	createManager(t, managerObj(foreign, rule, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, selecting(caseID),
		func(spec map[string]any) { spec["enforce"] = true }))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(foreign).Delete(context.Background(), rule, metav1.DeleteOptions{})
	})
	// The platform's own rule, in the namespace nsman runs in, still acts.
	createManager(t, managerObj(own, "leftovers", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, selecting(caseID+"-own")))

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	got := wantState(t, res, foreign, rule, report.StateForbidden)
	if want := "a rule may only live in a trusted namespace (" + own + "), not " + foreign; !strings.Contains(got.Message, want) {
		t.Errorf("rule in %s: message %q, want it to say %q", foreign, got.Message, want)
	}
	for _, ns := range victims {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted by a rule in %s, which nothing trusts", ns, foreign)
		}
	}
	if p := res.Pair(t, own, "leftovers", mine[0]); p.State != report.StateFired {
		t.Errorf("the rule in nsman's own namespace on %s: %s (%s), want %s", mine[0], p.State, p.Message, report.StateFired)
	}
	if len(res.Report.Summary.MissingTrusted) != 0 {
		t.Errorf("summary.missingTrusted %v, want none: nsman's own namespace exists", res.Report.Summary.MissingTrusted)
	}
}

// A trusted namespace that does not exist is said by every sweep: whoever
// creates it gets trusted managers and rules. One that exists is not.
func TestSweepSaysATrustedNamespaceIsMissing(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	ghost := "ghost-" + home
	caseID := home
	createManager(t, managerObj(home, home, caseID, []any{ttlPolicy("later", 3600, deleteAction)}))

	for _, selector := range []string{caseID, "nothing-" + caseID} { // with a manager listed, and with none
		res := e.Sweep(t, "-l", caseLabel+"="+selector, "--trusted-namespaces", ghost+","+home, "--dry-run")
		wantCode(t, res, 0)
		if got := res.Report.Summary.MissingTrusted; !slices.Equal(got, []string{ghost}) {
			t.Errorf("selector %s: summary.missingTrusted %v, want [%s]", selector, got, ghost)
		}
		if !strings.Contains(res.Stderr, "a trusted namespace does not exist") || !strings.Contains(res.Stderr, ghost) {
			t.Errorf("selector %s: the log does not say %s does not exist:\n%s", selector, ghost, res.Stderr)
		}
	}
}
