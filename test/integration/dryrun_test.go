package integration

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

func TestDryRunWritesNothingAndPlansTheRealSweep(t *testing.T) {
	e := setup(t)
	del, scale, hook, later := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := del
	recv := nsmantest.NewReceiver(t)
	_, err := shared.Admin.AppsV1().Deployments(scale).Create(t.Context(), nsmantest.Deployment("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(del, del, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	createManager(t, managerObj(scale, scale, caseID, []any{podsPolicy("scale when no tests run", map[string]any{"component": "tests"}, map[string]any{"type": "SCALE_DOWN"})}))
	createManager(t, managerObj(hook, hook, caseID, []any{ttlPolicy("notify at once", 0, webhookAction(recv.ServiceURL(t, shared.Admin, hook, "sink")+"/done"))}))
	createManager(t, managerObj(later, later, caseID, []any{ttlPolicy("delete in a day", 86400, deleteAction)}))
	selector := caseLabel + "=" + caseID

	before := len(e.Writes(t))
	dry := e.Sweep(t, "-l", selector, "--dry-run")
	wantCode(t, dry, 0)
	if writes := e.Writes(t)[before:]; len(writes) > 0 {
		t.Fatalf("dry run wrote:\n%v", writes)
	}
	if n := len(recv.Deliveries()); n > 0 {
		t.Fatalf("dry run sent %d webhooks", n)
	}
	if !dry.Report.Summary.DryRun || dry.Report.Summary.States[report.StatePlanned] != 3 {
		t.Fatalf("dry run summary %+v, want 3 planned", dry.Report.Summary)
	}
	for _, ns := range []string{del, scale, hook} {
		if e.NamespaceGoneOrTerminating(t, ns) || e.Deactivated(t, ns, ns) {
			t.Fatalf("dry run changed %s", ns)
		}
	}
	if d, err := shared.Admin.AppsV1().Deployments(scale).Get(t.Context(), "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("dry run scaled the deployment: %v %v", d.Spec.Replicas, err)
	}

	// What happens tomorrow: --at evaluates at another time.
	tomorrow := time.Now().Add(25 * time.Hour).UTC().Format(time.RFC3339)
	ahead := e.Sweep(t, "-l", selector, "--dry-run", "--at", tomorrow)
	wantState(t, ahead, later, later, report.StatePlanned)
	if bad := e.Sweep(t, "-l", selector, "--at", tomorrow); bad.Code != 2 {
		t.Fatalf("--at without --dry-run: exit %d, want 2", bad.Code)
	}

	real := e.Sweep(t, "-l", selector)
	wantCode(t, real, 0)
	for _, ns := range []string{del, scale, hook} {
		plan := wantState(t, dry, ns, ns, report.StatePlanned)
		done := wantState(t, real, ns, ns, report.StateFired)
		if plan.Policy != done.Policy || plan.Action != done.Action || !slices.Equal(plan.Effects, done.Effects) {
			t.Errorf("%s: planned %s %s %q, did %s %s %q", ns, plan.Policy, plan.Action, plan.Effects, done.Policy, done.Action, done.Effects)
		}
	}
	wantState(t, real, later, later, report.StateWaiting)
	if n := len(recv.Deliveries()); n != 1 {
		t.Fatalf("real sweep sent %d webhooks, want 1", n)
	}
}
