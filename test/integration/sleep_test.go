package integration

import (
	"fmt"
	"strings"
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

// sleepPolicy is a SLEEP policy "nights" whose one window, in UTC, is open
// from from to to after now (negative: before).
func sleepPolicy(from, to time.Duration) map[string]any {
	now := time.Now().UTC()
	return map[string]any{
		"name":      "nights",
		"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
		"windows":   []any{map[string]any{"from": now.Add(from).Format("15:04"), "to": now.Add(to).Format("15:04"), "timeZone": "UTC"}},
		"action":    map[string]any{"type": "SLEEP"},
	}
}

// sleepyNamespace is a new namespace with a Deployment web of 2 replicas,
// a CronJob report, and a manager whose SLEEP policy holds now.
func sleepyNamespace(t *testing.T) string {
	t.Helper()
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	createCronJob(t, ns, "report", false)
	createManager(t, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))
	return ns
}

// sleepEvents are the Events of reason on manager name in ns.
func sleepEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	list, err := shared.Admin.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=" + reason + ",regarding.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// workloadWrites are nsman's writes so far to the workloads of ns.
func workloadWrites(t *testing.T, e *nsmantest.Env, ns string) []string {
	t.Helper()
	var out []string
	for _, w := range e.Writes(t) {
		if w.Namespace == ns && w.Resource != "namespacemanagers" && w.Resource != "events" {
			out = append(out, w.String())
		}
	}
	return out
}

// A SLEEP policy puts its namespace to sleep while its window is open, and
// the sweeps after leave it asleep, writing nothing to its workloads; once
// the window no longer holds now it wakes, each workload as it was. The
// manager is never deactivated, its status says asleep since when, and
// Events Slept and Woke say each transition.
func TestSleepPolicyPutsToSleepAndWakes(t *testing.T) {
	e := setup(t)
	ns := sleepyNamespace(t)

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	slept := wantState(t, res, ns, ns, report.StateFired)
	if slept.Action != "SLEEP" || slept.Woke {
		t.Errorf("entry %+v, want a SLEEP that slept", slept)
	}
	wantWorkload(t, ns, "web", 0, "2")
	if got := kindsLine(t, ns); got != `CronJob/report suspend true record "false"` {
		t.Errorf("CronJob after the sleep: %s", got)
	}
	st := managerStatus(t, ns, ns)
	if st.Asleep == nil || st.Asleep.Policy != "nights" || st.Asleep.Partial || e.Deactivated(t, ns, ns) {
		t.Fatalf("status asleep %+v, deactivated %t; want asleep by nights, not deactivated", st.Asleep, e.Deactivated(t, ns, ns))
	}

	before := len(workloadWrites(t, e, ns))
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	asleep := wantState(t, res, ns, ns, report.StateAsleep)
	if !strings.Contains(asleep.Message, `(policy "nights")`) {
		t.Errorf("asleep entry says %q", asleep.Message)
	}
	if writes := workloadWrites(t, e, ns)[before:]; len(writes) > 0 {
		t.Errorf("a sweep while asleep wrote to the workloads: %v", writes)
	}

	// The window moves away from now: the policy no longer holds.
	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	woke := wantState(t, res, ns, ns, report.StateFired)
	if woke.Action != "SLEEP" || !woke.Woke {
		t.Errorf("entry %+v, want a SLEEP that woke", woke)
	}
	wantWorkload(t, ns, "web", 2, "")
	if got := kindsLine(t, ns); got != `CronJob/report suspend false` {
		t.Errorf("CronJob after the wake: %s", got)
	}
	if st := managerStatus(t, ns, ns); st.Asleep != nil || e.Deactivated(t, ns, ns) {
		t.Errorf("status asleep %+v, deactivated %t; want awake, not deactivated", st.Asleep, e.Deactivated(t, ns, ns))
	}
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateWaiting)
	for reason, want := range map[string]int{"Slept": 1, "Woke": 1} {
		if n := sleepEvents(t, ns, ns, reason); n != want {
			t.Errorf("%d Events %s, want %d", n, reason, want)
		}
	}
}

// kindsLine is the CronJob report of ns as kindsState writes it.
func kindsLine(t *testing.T, ns string) string {
	t.Helper()
	cj, err := shared.Admin.BatchV1().CronJobs(ns).Get(t.Context(), "report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("CronJob/report suspend %v", *cj.Spec.Suspend)
	if v, ok := cj.Annotations[status.SuspendAnnotation]; ok {
		line += fmt.Sprintf(" record %q", v)
	}
	return line
}

// A rule's SLEEP puts each namespace it matches to sleep and wakes it, its
// record of the namespace saying asleep in between; the rule, never
// deactivated, acts at each transition once.
func TestRuleSleepsAndWakesItsNamespaces(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	targets := labelled(t, caseID, 2)
	for _, ns := range targets {
		createDeployment(t, ns, "web", 1)
	}
	createManager(t, managerObj(home, "dev-nights", caseID, []any{sleepPolicy(-time.Hour, 2*time.Hour)}, selecting(caseID)))
	rule := env.Manager(t, home, "dev-nights")
	sweep := func(want report.State, when string) {
		t.Helper()
		res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home)
		wantCode(t, res, 0)
		wantPairs(t, res, home, "dev-nights", targets, want, when)
	}

	sweep(report.StateFired, "the window opened")
	for _, ns := range targets {
		wantWorkload(t, ns, "web", 0, "1")
		if st, _ := pairRecord(t, ns, rule.GetUID()); st.Asleep == nil || st.Asleep.Policy != "nights" {
			t.Errorf("record on %s: asleep %+v, want asleep by nights", ns, st.Asleep)
		}
	}
	sweep(report.StateAsleep, "asleep")

	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Patch(t.Context(), "dev-nights", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	sweep(report.StateFired, "the window closed")
	for _, ns := range targets {
		wantWorkload(t, ns, "web", 1, "")
		if st, _ := pairRecord(t, ns, rule.GetUID()); st.Asleep != nil {
			t.Errorf("record on %s: asleep %+v, want awake", ns, st.Asleep)
		}
	}
	sweep(report.StateWaiting, "awake")
	if e.Deactivated(t, home, "dev-nights") {
		t.Error("the rule was deactivated")
	}
}

// wake runs nsman wake with args as the test's admin and fails unless it
// exits 0.
func wake(t *testing.T, args ...string) {
	t.Helper()
	if code, out := runWake(t, shared.Kubeconfig, args...); code != 0 {
		t.Fatalf("nsman wake %v: exit %d: %s", args, code, out)
	}
}

// nsman wake wakes an asleep namespace until the time it writes, the sweep
// after that time puts it to sleep again while its policy holds, and a wake
// on a rule wakes each of its namespaces.
func TestWakeOnDemand(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	createManager(t, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))
	sweep := func(want report.State, woke bool) {
		t.Helper()
		res := e.Sweep(t, "-l", caseLabel+"="+ns)
		wantCode(t, res, 0)
		if got := wantState(t, res, ns, ns, want); got.Woke != woke {
			t.Errorf("entry %+v: woke %t, want %t", got, got.Woke, woke)
		}
	}
	sweep(report.StateFired, false)
	wantWorkload(t, ns, "web", 0, "2")

	wake(t, ns, "--for", "4s")
	sweep(report.StateFired, true)
	wantWorkload(t, ns, "web", 2, "")
	sweep(report.StateWaiting, false) // woken: the policy waits for the wake to end
	time.Sleep(5 * time.Second)
	sweep(report.StateFired, false)
	wantWorkload(t, ns, "web", 0, "2")

	// A wake on a rule wakes its namespaces.
	home := shared.Namespace(t)
	targets := labelled(t, home, 1)
	createDeployment(t, targets[0], "web", 1)
	createManager(t, managerObj(home, "dev-nights", home, []any{sleepPolicy(-time.Hour, 2*time.Hour)}, selecting(home)))
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}
	wantPairs(t, e.Sweep(t, args...), home, "dev-nights", targets, report.StateFired, "asleep")
	wantWorkload(t, targets[0], "web", 0, "1")
	wake(t, home, "--manager", "dev-nights", "--for", "1h")
	wantPairs(t, e.Sweep(t, args...), home, "dev-nights", targets, report.StateFired, "woken by the rule")
	wantWorkload(t, targets[0], "web", 1, "")
}

// A workload woken by someone else while its namespace sleeps is put back
// to sleep by the next sweep, which names who woke it (the field manager
// that last set its replicas) in its entry and a Warning Event; a sweep
// with nothing awake writes nothing.
func TestSleepUndoneIsPutBackToSleep(t *testing.T) {
	e := setup(t)
	ns := sleepyNamespace(t)
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateFired)
	wantWorkload(t, ns, "web", 0, "2")

	scaleByHand(t, ns, "web", 3)
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	back := wantState(t, res, ns, ns, report.StateFired)
	if back.Woke || len(back.Undone) != 1 || !strings.HasSuffix(back.Undone[0], ": Deployment/web") || strings.HasPrefix(back.Undone[0], "new:") {
		t.Errorf("entry %+v: want web put back to sleep, naming who woke it", back)
	}
	wantWorkload(t, ns, "web", 0, "3")
	// The deployment controller updates web's status after the scale by
	// hand: a patch conditional on the version nsman listed may be refused
	// (409) and sent again on the version read anew; those change nothing.
	var applied []string
	for _, w := range workloadWrites(t, e, ns) {
		if strings.HasSuffix(w, "-> 200") {
			applied = append(applied, w)
		}
	}
	if len(applied) != 3 {
		t.Errorf("nsman wrote %v to the workloads: want the sleep of web and report, then web put back to sleep", workloadWrites(t, e, ns))
	}
	if n := sleepEvents(t, ns, ns, "SleepUndone"); n != 1 {
		t.Errorf("%d Events SleepUndone, want 1", n)
	}
	if st := managerStatus(t, ns, ns); st.Asleep == nil || st.Asleep.Policy != "nights" {
		t.Errorf("status asleep %+v, want still asleep by nights", st.Asleep)
	}

	before := len(workloadWrites(t, e, ns))
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)
	if writes := workloadWrites(t, e, ns)[before:]; len(writes) > 0 {
		t.Errorf("a sweep with nothing awake wrote: %v", writes)
	}
}

// A workload Flux applies has Flux's reconcile turned off while it sleeps,
// as nsman's ServiceAccount under its admission policy, and back as it was
// at the wake.
func TestSleepTurnsFluxOffAndBack(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	d := nsmantest.Deployment("web", 2)
	d.Labels = map[string]string{status.FluxNameLabel: "apps"}
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))
	flux := func() (string, bool) {
		t.Helper()
		got, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := got.Annotations[status.FluxReconcileAnnotation]
		return v, ok
	}
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	if v, ok := flux(); v != "disabled" || !ok {
		t.Errorf("asleep: Flux reconcile %q (%t), want disabled", v, ok)
	}
	wantWorkload(t, ns, "web", 0, "2")
	wake(t, ns, "--for", "1h")
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	if v, ok := flux(); ok {
		t.Errorf("woken: Flux reconcile %q, want the annotation gone, as before the sleep", v)
	}
	wantWorkload(t, ns, "web", 2, "")
}
