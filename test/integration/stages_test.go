package integration

import (
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// stage makes a policy a stage: final false.
func stage(p map[string]any) map[string]any {
	p["final"] = false
	return p
}

// staged creates a trusted manager in home over target with three
// policies due at once: warn (a webhook) and park (scale to zero), both
// stages, then delete.
func staged(t *testing.T, home, name, target, caseID, url string) {
	t.Helper()
	createManager(t, managerObj(home, name, caseID, []any{
		stage(ttlPolicy("warn the owners", 0, webhookAction(url))),
		stage(ttlPolicy("park it", 0, map[string]any{"type": "SCALE_DOWN"})),
		ttlPolicy("delete it", 0, deleteAction),
	}, targeting(target)))
}

func firedStages(t *testing.T, ns, name string) []string {
	t.Helper()
	var out []string
	for _, f := range managerStatus(t, ns, name).Fired {
		out = append(out, f.Policy)
	}
	return out
}

// TestStagesFireOnePerSweep: a three-stage manager is played through by
// three sweeps, one stage each, in order; the first two leave it standing
// and are kept in status.fired; the last deletes and deactivates; a fourth
// sweep does nothing.
func TestStagesFireOnePerSweep(t *testing.T) {
	e := setup(t)
	home, target := shared.Namespace(t), shared.Namespace(t)
	createDeployment(t, target, "web", 2)
	recv := nsmantest.NewReceiver(t)
	staged(t, home, "lifecycle", target, home, recv.URL+"/warn")
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}

	for i, want := range []string{"warn the owners", "park it", "delete it"} {
		res := e.Sweep(t, args...)
		wantCode(t, res, 0)
		got := wantState(t, res, home, "lifecycle", report.StateFired)
		if got.Policy != want {
			t.Fatalf("sweep %d fired %q, want %q", i+1, got.Policy, want)
		}
		if deactivated := e.Deactivated(t, home, "lifecycle"); deactivated != (i == 2) {
			t.Errorf("after sweep %d: deactivated %v", i+1, deactivated)
		}
		if i < 2 {
			if fired := firedStages(t, home, "lifecycle"); len(fired) != i+1 || fired[i] != want {
				t.Errorf("after sweep %d: status.fired %q", i+1, fired)
			}
		}
	}
	d, err := shared.Admin.AppsV1().Deployments(target).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 0 {
		t.Errorf("replicas %d after the park stage", *d.Spec.Replicas)
	}
	if !e.NamespaceGoneOrTerminating(t, target) {
		t.Error("the last stage did not delete the namespace")
	}
	// Deactivated; while the namespace it deleted terminates, it says so.
	res := e.Sweep(t, args...)
	if got := res.Entry(t, home, "lifecycle"); got.State != report.StateDeactivated && got.State != report.StateTargetTerminating {
		t.Errorf("manager lifecycle: state %q (%s), want deactivated, or target-terminating while its namespace goes", got.State, got.Message)
	}
	if n := len(recv.Deliveries()); n != 1 {
		t.Errorf("%d warnings delivered, want 1", n)
	}
}

// TestStagesOnceUnderConcurrentSweeps: four sweeps at once, four rounds,
// over five three-stage managers, the sweeps of each round overlapping in
// time: each stage fires exactly once per manager, in order.
func TestStagesOnceUnderConcurrentSweeps(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	var targets []string
	for i := range 5 {
		target := shared.Namespace(t)
		createDeployment(t, target, "web", 2)
		staged(t, home, fmt.Sprintf("lifecycle-%d", i), target, home, recv.URL+"/"+target)
		targets = append(targets, target)
	}
	fired := map[string]int{}
	for range 4 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		spans := nsmantest.NewSpans().StartTogether(4)
		for i := range 4 {
			kubeconfig := spans.Kubeconfig(t, e, fmt.Sprint(i))
			wg.Go(func() {
				res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
				mu.Lock()
				defer mu.Unlock()
				for _, entry := range res.Report.Entries {
					if entry.State == report.StateFired {
						fired[entry.Name+"/"+entry.Policy]++
					}
				}
			})
		}
		wg.Wait()
		spans.Check(t)
	}
	for i := range targets {
		for _, p := range []string{"warn the owners", "park it", "delete it"} {
			if n := fired[fmt.Sprintf("lifecycle-%d/%s", i, p)]; n != 1 {
				t.Errorf("lifecycle-%d %q fired %d times, want 1", i, p, n)
			}
		}
		if !e.Deactivated(t, home, fmt.Sprintf("lifecycle-%d", i)) {
			t.Errorf("lifecycle-%d not deactivated", i)
		}
	}
	perKey := map[string]int{}
	for _, d := range recv.Deliveries() {
		perKey[d.Header.Get("Idempotency-Key")]++
	}
	if len(perKey) != len(targets) {
		t.Errorf("%d warnings, want %d", len(perKey), len(targets))
	}
	for k, n := range perKey {
		if n != 1 {
			t.Errorf("warning %s delivered %d times", k, n)
		}
	}
}

// TestRuleStagesPerNamespace: a rule's stages fire once per namespace, one
// per sweep, and only its final policy makes the namespace done.
func TestRuleStagesPerNamespace(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 2)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "staged-rule", home, []any{
		stage(ttlPolicy("warn the owners", 0, webhookAction(recv.URL+"/warn"))),
		ttlPolicy("report done", 0, webhookAction(recv.URL+"/done")),
	}, selecting(home)))
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}
	for i, want := range []struct {
		state  report.State
		policy string
	}{{report.StateFired, "warn the owners"}, {report.StateFired, "report done"}, {report.StateDone, "report done"}} {
		res := e.Sweep(t, args...)
		wantCode(t, res, 0)
		for _, ns := range targets {
			if p := res.Pair(t, home, "staged-rule", ns); p.State != want.state || p.Policy != want.policy {
				t.Errorf("sweep %d, %s: %q %q (%s), want %q %q", i+1, ns, p.State, p.Policy, p.Message, want.state, want.policy)
			}
		}
	}
	paths := map[string]int{}
	for _, d := range recv.Deliveries() {
		paths[d.Path]++
	}
	if paths["/warn"] != 2 || paths["/done"] != 2 {
		t.Errorf("deliveries %v, want 2 warnings and 2 reports", paths)
	}
}
