package integration

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	nsmanwrite "github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// sleepToOne is sleepPolicy(from, to) keeping one replica (params.replicas).
func sleepToOne(from, to time.Duration) map[string]any {
	p := sleepPolicy(from, to)
	p["action"] = map[string]any{"type": "SLEEP", "params": map[string]any{"replicas": int64(1)}}
	return p
}

// asleepAt is what a Deployment's record says nsman left it at
// (status.ReplicasAsleepAnnotation), "" for none.
func asleepAt(t *testing.T, ns, name string) string {
	t.Helper()
	d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Annotations[status.ReplicasAsleepAnnotation]
}

// writesTo are nsman's writes so far to the Deployment name of ns.
func writesTo(t *testing.T, ns, name string) int {
	t.Helper()
	n := 0
	for _, w := range env.Writes(t) {
		if w.Namespace == ns && w.Resource == "deployments" && w.Name == name {
			n++
		}
	}
	return n
}

// windowLater moves the window of the manager ns's SLEEP policy (sleepToOne)
// away from now: the policy no longer holds.
func windowLater(t *testing.T, ns string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(sleepToOne(3*time.Hour, 4*time.Hour)))
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A SLEEP with replicas: 1 scales web from 3 to 1, recording 3 and the 1
// it left it at, and leaves worker, at 1 already, as it is: never written
// to, no record. The sweeps after find both asleep and write nothing; the
// wake brings web's 3 back and leaves worker at 1.
func TestSleepToOneReplicaAndWake(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 3)
	createDeployment(t, ns, "worker", 1)
	createManager(t, managerObj(ns, ns, ns, []any{sleepToOne(-time.Hour, 2*time.Hour)}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	slept := wantState(t, res, ns, ns, report.StateFired)
	if !slices.Equal(slept.Effects, []string{"scale Deployment/web from 3 to 1"}) {
		t.Errorf("effects %q, want web scaled from 3 to 1 alone", slept.Effects)
	}
	wantWorkload(t, ns, "web", 1, "3")
	wantWorkload(t, ns, "worker", 1, "")
	if got := asleepAt(t, ns, "web"); got != "1" {
		t.Errorf("web's record of where it sleeps %q, want \"1\"", got)
	}
	if n := writesTo(t, ns, "worker"); n != 0 {
		t.Errorf("%d writes to worker, at 1 already: want none", n)
	}

	before := len(workloadWrites(t, e, ns))
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)
	if writes := workloadWrites(t, e, ns)[before:]; len(writes) > 0 {
		t.Errorf("a sweep while asleep at 1 wrote to the workloads: %v", writes)
	}

	windowLater(t, ns)
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	woke := wantState(t, res, ns, ns, report.StateFired)
	if !woke.Woke || !slices.Equal(woke.Effects, []string{"scale Deployment/web from 1 to 3"}) {
		t.Errorf("entry woke %t, effects %q; want web woken from 1 to 3 alone", woke.Woke, woke.Effects)
	}
	wantWorkload(t, ns, "web", 3, "")
	wantWorkload(t, ns, "worker", 1, "")
	if got := asleepAt(t, ns, "web"); got != "" {
		t.Errorf("web keeps its record of where it slept, %q, after the wake", got)
	}
	if n := writesTo(t, ns, "worker"); n != 0 {
		t.Errorf("%d writes to worker, at 1 all along: want none", n)
	}
}

// A workload asleep at 1 that someone scales to 3 is awake: the next sweep
// puts it back to 1, naming who woke it, its record now the 3 it was woken
// to, which the wake brings back.
func TestSleepToOneReplicaUndoneIsPutBack(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	createManager(t, managerObj(ns, ns, ns, []any{sleepToOne(-time.Hour, 2*time.Hour)}))
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	wantWorkload(t, ns, "web", 1, "2")

	scaleByHand(t, ns, "web", 3)
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	back := wantState(t, res, ns, ns, report.StateFired)
	if back.Woke || len(back.Undone) != 1 || !slices.Equal(back.Effects, []string{"scale Deployment/web from 3 to 1"}) {
		t.Errorf("entry %+v: want web put back to 1, naming who woke it", back)
	}
	wantWorkload(t, ns, "web", 1, "3")
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)

	windowLater(t, ns)
	woke := wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	if !woke.Woke {
		t.Errorf("entry %+v, want a wake", woke)
	}
	wantWorkload(t, ns, "web", 3, "")
}

// A SCALE_DOWN with replicas: 1 leaves one replica of web, recorded, and
// nsman restore, which knows no policy, brings the count back from there.
func TestScaleDownToOneReplicaRestores(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 3)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("scale at once", 0, map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"replicas": int64(1)}})}))
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	wantState(t, res, ns, ns, report.StateFired)
	wantWorkload(t, ns, "web", 1, "3")

	out, code := runRestore(t, ns)
	if code != 0 {
		t.Fatalf("nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	wantWorkload(t, ns, "web", 3, "")
}

// patchesApplied counts nsman's writes to the Deployment name of ns that
// the API server applied (a conflict, refused, is read again and sent
// anew).
func patchesApplied(t *testing.T, ns, name string) int {
	t.Helper()
	n := 0
	for _, w := range env.Writes(t) {
		if w.Namespace == ns && w.Resource == "deployments" && w.Name == name && w.Code == 200 {
			n++
		}
	}
	return n
}

// sweepsAtOnce runs four sweeps of ns's managers together, with args, their
// requests overlapping in time, and returns how many fired.
func sweepsAtOnce(t *testing.T, ns string, args ...string) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := 0
	spans := nsmantest.NewSpans().StartTogether(4)
	for i := range 4 {
		kubeconfig := spans.Kubeconfig(t, env, fmt.Sprint(i))
		wg.Go(func() {
			res := env.Sweep(t, append([]string{"--kubeconfig", kubeconfig, "-l", caseLabel + "=" + ns}, args...)...)
			mu.Lock()
			defer mu.Unlock()
			for _, entry := range res.Report.Entries {
				if entry.State == report.StateFired {
					fired++
				}
			}
		})
	}
	wg.Wait()
	spans.Check(t)
	return fired
}

// Four sweeps at once put web to sleep at 1 once, its record the 3 it had
// (no sweep records the 1 another left), and four at once wake it once,
// back to 3.
func TestSleepToOneReplicaOnceUnderConcurrentSweeps(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 3)
	createManager(t, managerObj(ns, ns, ns, []any{sleepToOne(-time.Hour, 2*time.Hour)}))

	if n := sweepsAtOnce(t, ns); n != 1 {
		t.Errorf("%d sweeps put it to sleep, want 1", n)
	}
	wantWorkload(t, ns, "web", 1, "3")
	if n := patchesApplied(t, ns, "web"); n != 1 {
		t.Errorf("%d writes to web applied, want the one sleep", n)
	}

	windowLater(t, ns)
	if n := sweepsAtOnce(t, ns); n != 1 {
		t.Errorf("%d sweeps woke it, want 1", n)
	}
	wantWorkload(t, ns, "web", 3, "")
	if n := patchesApplied(t, ns, "web"); n != 2 {
		t.Errorf("%d writes to web applied, want the sleep and the wake", n)
	}
}
