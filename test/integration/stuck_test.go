package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsman/nsman/report"
)

// stuckEvents counts the NamespaceStuck Events on manager name in ns.
func stuckEvents(t *testing.T, ns, name string) int {
	t.Helper()
	list, err := shared.Admin.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=NamespaceStuck,regarding.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// hasReason reports whether st names reason, in a message holding words.
func hasReason(st *report.Stuck, reason, words string) bool {
	return st != nil && slices.ContainsFunc(st.Reasons, func(r report.StuckReason) bool {
		return r.Reason == reason && strings.Contains(r.Message, words)
	})
}

// TestStuckNamespacesAreTold, on the full control plane (the namespace
// controller running): a trusted manager deletes a namespace that a
// ConfigMap's finalizer keeps, and a rule deletes one with a finalizer of
// its own. Past --stuck-after, the manager (deactivated by its DELETE) and
// the rule's pair say target-terminating and why, the manager's status and
// the rule's too, with one Warning Event each; a sweep after that writes
// nothing and tells nothing again; once the namespace goes, the manager's
// status says stuck no more.
func TestStuckNamespacesAreTold(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	home := shared.Namespace(t)
	caseID := home
	held := shared.Namespace(t)
	keepTerminating(t, held)
	ruled := labelled(t, caseID, 1)[0]
	ns, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ruled, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "nsman.test/own")
	if _, err := shared.Admin.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseOwnFinalizer(ruled) })
	createManager(t, managerObj(home, "deleter", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(held)))
	createManager(t, managerObj(home, "reaper", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, selecting(caseID)))
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--stuck-after", "1s"}

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	wantState(t, res, home, "deleter", report.StateFired)
	if p := res.Pair(t, home, "reaper", ruled); p.State != report.StateFired {
		t.Fatalf("rule on %s: %s (%s), want fired", ruled, p.State, p.Message)
	}
	// The namespace controller says why once it has deleted what it can.
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := shared.Admin.CoreV1().Namespaces().Get(ctx, held, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Status.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		t.Fatalf("no NamespaceFinalizersRemaining condition on %s", held)
	}

	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	d := wantState(t, res, home, "deleter", report.StateTargetTerminating)
	if !hasReason(d.Stuck, report.StuckFinalizersRemaining, "nsman.test/held") || d.Policy != "delete at once" || !strings.Contains(d.Message, "nsman explain "+held) {
		t.Errorf("deleter's entry %+v (stuck %+v): want the finalizer nsman.test/held named, the policy that deleted, and nsman explain", d, d.Stuck)
	}
	p := res.Pair(t, home, "reaper", ruled)
	if p.State != report.StateTargetTerminating || !hasReason(p.Stuck, report.StuckNamespaceFinalizers, "spec.finalizers nsman.test/own") {
		t.Errorf("rule's entry on %s: %+v (stuck %+v), want target-terminating and the namespace's own finalizer named", ruled, p, p.Stuck)
	}
	if res.Report.Summary.Stuck != 2 {
		t.Errorf("summary counts %d stuck namespaces, want 2", res.Report.Summary.Stuck)
	}
	st := managerStatus(t, home, "deleter")
	if !hasReason(st.Stuck, report.StuckFinalizersRemaining, "nsman.test/held") || st.State != report.StateFired || condition(st).Status != metav1.ConditionTrue {
		t.Errorf("deleter's status %+v: want it stuck, and still fired", st)
	}
	rule := managerStatus(t, home, "reaper")
	if rule.Rule == nil || len(rule.Rule.Stuck) != 1 || rule.Rule.Stuck[0].Namespace != ruled || !hasReason(&rule.Rule.Stuck[0].Stuck, report.StuckNamespaceFinalizers, "nsman.test/own") {
		t.Errorf("rule's status %+v: want %s listed stuck, with why", rule.Rule, ruled)
	}
	if a, b := stuckEvents(t, home, "deleter"), stuckEvents(t, home, "reaper"); a != 1 || b != 1 {
		t.Errorf("NamespaceStuck Events: deleter %d, reaper %d; want 1 each", a, b)
	}

	// Again: the same causes write nothing and tell nothing.
	before := map[string]string{}
	for _, name := range []string{"deleter", "reaper"} {
		before[name] = e.Manager(t, home, name).GetResourceVersion()
	}
	res = e.Sweep(t, args...)
	wantState(t, res, home, "deleter", report.StateTargetTerminating)
	for _, name := range []string{"deleter", "reaper"} {
		if now := e.Manager(t, home, name).GetResourceVersion(); now != before[name] {
			t.Errorf("%s written again (resourceVersion %s → %s) though the cause is the same", name, before[name], now)
		}
		if n := stuckEvents(t, home, name); n != 1 {
			t.Errorf("%s: %d NamespaceStuck Events after a sweep that found the same cause, want 1", name, n)
		}
	}

	// Released, the namespace goes, and the status says stuck no more.
	if _, err := shared.Admin.CoreV1().ConfigMaps(held).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := shared.Admin.CoreV1().Namespaces().Get(ctx, held, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("namespace %s still there once released", held)
	}
	res = e.Sweep(t, args...)
	wantState(t, res, home, "deleter", report.StateDeactivated)
	if st := managerStatus(t, home, "deleter"); st.Stuck != nil {
		t.Errorf("deleter's status still says stuck once %s went: %+v", held, st.Stuck)
	}
}

// releaseOwnFinalizer removes namespace ns's own finalizers, so that it
// goes once deleted.
func releaseOwnFinalizer(ns string) {
	ctx := context.Background()
	n, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return
	}
	n.Spec.Finalizers = nil
	_, _ = shared.Admin.CoreV1().Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
}
