package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// idlePolicy is an IDLE condition of seconds.
func idlePolicy(name string, seconds int64, action map[string]any) map[string]any {
	return map[string]any{
		"name":      name,
		"condition": map[string]any{"type": policy.ConditionIdle, "params": map[string]any{"idleSeconds": seconds}},
		"action":    action,
	}
}

// createdAt is namespace ns's creationTimestamp.
func createdAt(t *testing.T, ns string) time.Time {
	t.Helper()
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.CreationTimestamp.Time
}

// idleRule creates probe.ActivityIndexAfter + 8 namespaces and, in a
// namespace of its own (also the case's ID), a rule "idle" over them with
// an IDLE policy of a minute; it returns that namespace, the namespaces
// and the newest one's creation.
func idleRule(t *testing.T) (home string, targets []string, newest time.Time) {
	t.Helper()
	home = shared.Namespace(t)
	targets = labelled(t, home, probe.ActivityIndexAfter+8)
	createManager(t, managerObj(home, "idle", home, []any{idlePolicy("idle a minute", 60, deleteAction)}, selecting(home)))
	return home, targets, lastCreated(t, targets)
}

// lastCreated is the newest creationTimestamp of the namespaces.
func lastCreated(t *testing.T, namespaces []string) time.Time {
	t.Helper()
	var newest time.Time
	for _, ns := range namespaces {
		if c := createdAt(t, ns); c.After(newest) {
			newest = c
		}
	}
	return newest
}

// waitPast sleeps until at has passed by half a second: an object created
// then has a creationTimestamp (to the second) after at's second.
func waitPast(at time.Time) {
	time.Sleep(time.Until(at.Truncate(time.Second).Add(1500 * time.Millisecond)))
}

// replicaSet is a ReplicaSet of no replicas, as a Deployment's rollout
// creates one.
func replicaSet(name string) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/web:1"}}}}},
	}
}

// createReplicaSet creates a ReplicaSet in ns and returns its
// creationTimestamp.
func createReplicaSet(t *testing.T, ns, name string) time.Time {
	t.Helper()
	rs, err := shared.Admin.AppsV1().ReplicaSets(ns).Create(t.Context(), replicaSet(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs.CreationTimestamp.Time
}

// wantActivity checks an entry's last activity.
func wantActivity(t *testing.T, who string, got *report.LastActivity, at time.Time, what string) {
	t.Helper()
	if got == nil || !got.At.Time.Equal(at) || got.What != what {
		t.Errorf("%s: last activity %+v, want %q at %s", who, got, what, at.UTC().Format(time.RFC3339))
	}
}

// TestIdle: an IDLE condition waits on the namespace's creation, reading
// nothing, while that is recent enough; then reads what was created in the
// namespace (a ReplicaSet here) and waits on the newest; the touched
// annotation nsman touch writes counts, one that is no time is ignored and
// said so (entry, status, one Warning Event); a namespace idle long enough
// goes. The report and the status
// say the last activity, the due time follows it, and --at honours it.
func TestIdle(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}
	gone, deployed, touched, misdated := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	createManager(t, managerObj(home, "gone", caseID, []any{idlePolicy("idle a second", 1, deleteAction)}, targeting(gone)))
	for _, ns := range []string{deployed, touched, misdated} {
		createManager(t, managerObj(home, ns, caseID, []any{idlePolicy("idle a minute", 60, deleteAction)}, targeting(ns)))
	}
	created := map[string]time.Time{}
	for _, ns := range []string{gone, deployed, touched, misdated} {
		created[ns] = createdAt(t, ns)
	}
	waitPast(created[misdated])
	rolledOut := createReplicaSet(t, deployed, "web-7d9f")
	// A namespace that is not there fails its touch, not the others'.
	var out bytes.Buffer
	missing := touched + "-missing"
	if code := cmd.Execute(t.Context(), []string{"touch", "--kubeconfig", shared.Kubeconfig, missing, touched}, &out, &out); code != 1 ||
		!strings.Contains(out.String(), "namespace "+touched+" touched at ") || !strings.Contains(out.String(), "touch namespace "+missing+": ") {
		t.Fatalf("nsman touch: exit %d, %q; want 1, %s touched, %s not found", code, out.String(), touched, missing)
	}
	ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), touched, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	touchedAt, err := time.Parse(time.RFC3339, ns.Annotations[policy.TouchedAnnotation])
	if err != nil || !touchedAt.After(created[touched]) {
		t.Fatalf("nsman touch wrote %q (%v), want a time after the namespace's creation", ns.Annotations[policy.TouchedAnnotation], err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"yesterday"}}}`, policy.TouchedAnnotation)
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), misdated, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	g := wantState(t, res, home, "gone", report.StateFired)
	wantActivity(t, "gone", g.LastActivity, created[gone], "namespace created")
	if !strings.Contains(g.Message, "idle 1s since") {
		t.Errorf("gone: %q, want it idle a second", g.Message)
	}
	// Created under a minute ago: it waits on its creation.
	d := wantState(t, res, home, deployed, report.StateWaiting)
	wantActivity(t, deployed, d.LastActivity, created[deployed], "namespace created")
	if due := created[deployed].Add(time.Minute); d.Due == nil || !d.Due.Equal(due) {
		t.Errorf("%s: due %v, want %v", deployed, d.Due, due)
	}
	if st := managerStatus(t, home, deployed); st.LastActivity == nil || !st.LastActivity.At.Time.Equal(created[deployed]) || st.LastActivity.What != "namespace created" {
		t.Errorf("%s's status says last activity %+v, want its creation", deployed, st.LastActivity)
	}
	wantActivity(t, touched, wantState(t, res, home, touched, report.StateWaiting).LastActivity, touchedAt, "touched (annotation "+policy.TouchedAnnotation+")")
	m := wantState(t, res, home, misdated, report.StateWaiting)
	wantActivity(t, misdated, m.LastActivity, created[misdated], "namespace created")
	if want := `annotation ` + policy.TouchedAnnotation + `: "yesterday" is not an RFC 3339 time (2026-11-24T09:30:00Z): ignored`; m.AnnotationIgnored != want || !strings.Contains(m.Message, want) {
		t.Errorf("%s: annotationIgnored %q, %q; want %q", misdated, m.AnnotationIgnored, m.Message, want)
	}
	if st := managerStatus(t, home, misdated); st.IgnoredAnnotation != m.AnnotationIgnored {
		t.Errorf("%s's status says ignoredAnnotation %q, want %q", misdated, st.IgnoredAnnotation, m.AnnotationIgnored)
	}
	ignoredEvents := func() int {
		list, err := shared.Admin.EventsV1().Events(home).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=AnnotationIgnored,regarding.name=" + misdated})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	if n := ignoredEvents(); n != 1 {
		t.Errorf("%d AnnotationIgnored Events on %s, want 1", n, misdated)
	}
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	// Only gone's creation let its policy hold: only its namespace was read.
	for _, r := range after[len(before):] {
		if r.Verb == "list" && r.Resource == "replicasets" && r.Namespace != gone {
			t.Errorf("the sweep listed ReplicaSets in %q; want only in %s, the one namespace old enough", r.Namespace, gone)
		}
	}

	// A minute after its creation, deployed's ReplicaSet keeps it: its due
	// time is a minute after the rollout.
	plan := e.Sweep(t, append(args, "--dry-run", "--at", created[deployed].Add(time.Minute).Format(time.RFC3339))...)
	d = wantState(t, plan, home, deployed, report.StateWaiting)
	wantActivity(t, deployed, d.LastActivity, rolledOut, "ReplicaSet web-7d9f created")
	if due := rolledOut.Add(time.Minute); d.Due == nil || !d.Due.Equal(due) || !strings.Contains(d.Message, "last activity: ReplicaSet web-7d9f created at") {
		t.Errorf("%s at a minute: due %v, %q; want due a minute after the rollout, %v", deployed, d.Due, d.Message, due)
	}
	wantState(t, plan, home, touched, report.StateWaiting)
	plan = e.Sweep(t, append(args, "--dry-run", "--at", rolledOut.Add(time.Minute).Format(time.RFC3339))...)
	wantActivity(t, deployed, wantState(t, plan, home, deployed, report.StatePlanned).LastActivity, rolledOut, "ReplicaSet web-7d9f created")
	wantState(t, plan, home, touched, report.StatePlanned)
	wantState(t, plan, home, misdated, report.StatePlanned)
	// A second sweep tells nothing new.
	wantState(t, e.Sweep(t, args...), home, misdated, report.StateWaiting)
	if n := ignoredEvents(); n != 1 {
		t.Errorf("%d AnnotationIgnored Events on %s after a second sweep, want still 1", n, misdated)
	}
}

// TestIdleIndexIsConfirmed: past probe.ActivityIndexAfter namespaces, a
// rule's IDLE reads the last activity from the sweep's cluster-wide lists,
// once; what they say is idle is read again in its namespace before it
// acts. Here the rule's status says it matched more, so that the lists
// answer every namespace from the first; a ReplicaSet is created in every
// namespace as the first of them is read again, after every cluster-wide
// list, whatever their order: each namespace must wait on it, not go.
func TestIdleIndexIsConfirmed(t *testing.T) {
	e := setup(t)
	home, targets, newest := idleRule(t)
	caseID, n := home, len(targets)
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--reclaim=false"}
	// A sweep while they are new writes the rule's status: it matched n.
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	wantPairs(t, res, home, "idle", targets, report.StateWaiting, "while new")
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		var once sync.Once
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && slices.Contains(targets, namespaceOfPath(r.URL.Path)) {
				// Every request in a namespace waits for the ReplicaSets.
				once.Do(func() {
					for _, ns := range targets {
						if _, err := shared.Admin.AppsV1().ReplicaSets(ns).Create(context.Background(), replicaSet("deploy"), metav1.CreateOptions{}); err != nil {
							t.Errorf("create a ReplicaSet in %s: %v", ns, err)
						}
					}
				})
			}
			rp.ServeHTTP(w, r)
		})
	})
	// Half a second after a minute past the newest namespace's creation,
	// every namespace but for its ReplicaSet is idle; the ReplicaSets,
	// created in a later second, are not.
	waitPast(newest)
	at := newest.Add(time.Minute + 500*time.Millisecond).Format(time.RFC3339Nano)
	lists := listsDuring(t, e, func() {
		res = e.Sweep(t, append(args, "--kubeconfig", kubeconfig, "--dry-run", "--at", at)...)
	})
	wantCode(t, res, 0)
	for _, ns := range targets {
		p := res.Pair(t, home, "idle", ns)
		if p.State != report.StateWaiting {
			t.Errorf("%s: %s (%s), want waiting on its ReplicaSet", ns, p.State, p.Message)
		} else if p.LastActivity == nil || p.LastActivity.What != "ReplicaSet deploy created" {
			t.Errorf("%s waits on %+v, want its ReplicaSet", ns, p.LastActivity)
		}
	}
	for _, resource := range []string{"pods", "replicasets", "controllerrevisions", "jobs"} {
		if lists[resource+" cluster-wide"] != 1 {
			t.Errorf("%s listed cluster-wide %d times, want once: %v", resource, lists[resource+" cluster-wide"], lists)
		}
	}
	if lists["replicasets by namespace"] != n {
		t.Errorf("ReplicaSets listed in %d namespaces, want each of the %d read again once: %v", lists["replicasets by namespace"], n, lists)
	}
}

// A namespace touched between the sweep's listing and its DELETE (CI
// deploying to it) is read again and left to the next sweep, which waits
// on the touch. A DELETE of no IDLE policy goes ahead: the touch changes
// nothing it read.
func TestTouchedBeforeTheDelete(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	target, timed := shared.Namespace(t), shared.Namespace(t)
	createManager(t, managerObj(home, "idle", home, []any{idlePolicy("idle a second", 1, deleteAction)}, targeting(target)))
	createManager(t, managerObj(home, "ttl", home, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(timed)))
	waitPast(createdAt(t, target))
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		var mu sync.Mutex
		touched := map[string]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for _, ns := range []string{target, timed} {
				mu.Lock()
				first := isDelete(r, ns) && !touched[ns]
				touched[ns] = touched[ns] || first
				mu.Unlock()
				if first {
					var out bytes.Buffer
					if code := cmd.Execute(context.Background(), []string{"touch", "--kubeconfig", shared.Kubeconfig, ns}, &out, &out); code != 0 {
						t.Errorf("nsman touch: exit %d, %s", code, out.String())
					}
				}
			}
			rp.ServeHTTP(w, r)
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantState(t, res, home, "idle", report.StateBusy)
	wantState(t, res, home, "ttl", report.StateFired)
	if e.NamespaceGoneOrTerminating(t, target) {
		t.Fatal("the namespace was deleted though it was touched before the DELETE")
	}
	ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// At the touch (a dry run, so that the time is the touch's second).
	res = e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home, "--dry-run", "--at", ns.Annotations[policy.TouchedAnnotation])
	if w := wantState(t, res, home, "idle", report.StateWaiting); w.LastActivity == nil || !strings.HasPrefix(w.LastActivity.What, "touched") {
		t.Errorf("after the touch: %+v, want it waiting on the touch", w.LastActivity)
	}
}

// In a freeze, nothing acts whatever the activity says: no namespace's
// activity is read, by namespace or cluster-wide.
func TestIdleInAFreezeIsNotConfirmed(t *testing.T) {
	e := setup(t)
	home, targets, newest := idleRule(t)
	caseID := home
	at := newest.Add(2 * time.Minute)
	freeze := at.Add(-time.Hour).Format(time.RFC3339) + "/" + at.Add(time.Hour).Format(time.RFC3339)
	var res nsmantest.Result
	lists := listsDuring(t, e, func() {
		res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home, "--dry-run", "--at", at.Format(time.RFC3339), "--freeze", freeze, "--reclaim=false")
	})
	wantCode(t, res, 0)
	for _, ns := range targets {
		if p := res.Pair(t, home, "idle", ns); p.State != report.StateWaiting || !strings.Contains(p.Message, "is not read in a freeze") {
			t.Errorf("%s: %s (%s), want waiting for the freeze's end, its activity not read", ns, p.State, p.Message)
		}
	}
	if inNamespace, clusterWide := lists["replicasets by namespace"], lists["replicasets cluster-wide"]; inNamespace != 0 || clusterWide != 0 {
		t.Errorf("ReplicaSets listed in %d namespaces and %d times cluster-wide in a freeze, want none", inNamespace, clusterWide)
	}
}

// Many IDLE managers of one namespace read its activity once, and never
// the sweep's cluster-wide lists: probe.ActivityIndexAfter counts
// namespaces, not managers.
func TestIdleManagersOfOneNamespaceReadItOnce(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	caseID := ns
	n := probe.ActivityIndexAfter + 1
	for i := range n {
		createManager(t, managerObj(ns, fmt.Sprintf("idle-%02d", i), caseID, []any{idlePolicy("idle a minute", 60, deleteAction)}, targeting(ns)))
	}
	at := createdAt(t, ns).Add(2 * time.Minute)
	var res nsmantest.Result
	lists := listsDuring(t, e, func() {
		res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--dry-run", "--at", at.Format(time.RFC3339), "--reclaim=false")
	})
	wantCode(t, res, 0)
	for i := range n {
		wantState(t, res, ns, fmt.Sprintf("idle-%02d", i), report.StatePlanned)
	}
	if inNamespace, clusterWide := lists["replicasets by namespace"], lists["replicasets cluster-wide"]; inNamespace != 1 || clusterWide != 0 {
		t.Errorf("%d IDLE managers of one namespace: ReplicaSets listed %d times in it and %d times cluster-wide, want 1 and 0", n, inNamespace, clusterWide)
	}
}

// A manager under a hold reads no activity: whatever it says, the hold
// keeps the manager waiting.
func TestIdleUnderAHoldReadsNoActivity(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	caseID := ns
	at := createdAt(t, ns).Add(2 * time.Minute)
	held := managerObj(ns, ns, caseID, []any{idlePolicy("idle a minute", 60, deleteAction)})
	held.SetAnnotations(map[string]string{status.HoldAnnotation: at.Add(time.Hour).UTC().Format(time.RFC3339)})
	createManager(t, held)
	var res nsmantest.Result
	lists := listsDuring(t, e, func() {
		res = e.Sweep(t, "-l", caseLabel+"="+caseID, "--dry-run", "--at", at.Format(time.RFC3339), "--reclaim=false")
	})
	wantCode(t, res, 0)
	if got := wantState(t, res, ns, ns, report.StateWaiting); got.HeldUntil == nil || !strings.Contains(got.Message, "is not read while it is held") {
		t.Errorf("held: %s (%s), held until %v; want waiting for the hold's end, its activity not read", got.State, got.Message, got.HeldUntil)
	}
	for _, r := range []string{"replicasets", "controllerrevisions", "jobs", "pods"} {
		if got := lists[r+" by namespace"] + lists[r+" cluster-wide"]; got != 0 {
			t.Errorf("a held manager: %s listed %d times, want none", r, got)
		}
	}
}

// A sweep whose managers' last status says more than
// probe.ActivityIndexAfter of them read their namespace's activity reads
// it from the sweep's cluster-wide lists from the first, rather than that
// many namespaces one by one first; so does a rule over more namespaces.
func TestIdleIndexAhead(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	n := probe.ActivityIndexAfter + 8
	var targets []string
	for range n {
		ns := shared.Namespace(t)
		targets = append(targets, ns)
		createManager(t, managerObj(ns, ns, caseID, []any{idlePolicy("idle 10s", 10, deleteAction)}))
	}
	ruled := labelled(t, caseID, n)
	createManager(t, managerObj(home, "rule", caseID, []any{idlePolicy("idle 10s", 10, deleteAction)}, selecting(caseID)))
	waitPast(lastCreated(t, append(slices.Clone(targets), ruled...)).Add(10 * time.Second))
	var rolledOut time.Time
	for _, ns := range append(slices.Clone(targets), ruled...) {
		rolledOut = createReplicaSet(t, ns, "web")
	}
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}
	lists := func(run func()) (inNamespace, clusterWide int) {
		t.Helper()
		n := listsDuring(t, e, run)
		return n["replicasets by namespace"], n["replicasets cluster-wide"]
	}
	// The first sweep knows nothing ahead: the first 32 namespaces are read
	// one by one, the others from the index.
	in, all := lists(func() {
		res := e.Sweep(t, args...)
		wantCode(t, res, 0)
		for _, ns := range targets {
			if w := wantState(t, res, ns, ns, report.StateWaiting); w.LastActivity == nil || w.LastActivity.What != "ReplicaSet web created" {
				t.Fatalf("%s: %+v, want it waiting on its ReplicaSet", ns, w.LastActivity)
			}
		}
	})
	if in != probe.ActivityIndexAfter || all != 1 {
		t.Errorf("first sweep: ReplicaSets listed in %d namespaces and %d times cluster-wide, want %d and 1", in, all, probe.ActivityIndexAfter)
	}
	// The next (a dry run, at a time the ReplicaSets are recent) reads them
	// all from the index.
	in, all = lists(func() {
		res := e.Sweep(t, append(args, "--dry-run", "--at", rolledOut.Add(time.Second).Format(time.RFC3339))...)
		for _, ns := range ruled {
			if p := res.Pair(t, home, "rule", ns); p.State != report.StateWaiting {
				t.Errorf("rule on %s: %s (%s), want waiting", ns, p.State, p.Message)
			}
		}
	})
	if in != 0 || all != 1 {
		t.Errorf("next sweep: ReplicaSets listed in %d namespaces and %d times cluster-wide, want 0 and 1", in, all)
	}
	// The rule alone: its status says it matched more.
	in, all = lists(func() {
		res := e.Sweep(t, append(args, "--namespace", home, "--dry-run", "--at", rolledOut.Add(time.Second).Format(time.RFC3339))...)
		if p := res.Pair(t, home, "rule", ruled[0]); p.State != report.StateWaiting {
			t.Errorf("rule on %s: %s (%s), want waiting", ruled[0], p.State, p.Message)
		}
	})
	if in != 0 || all != 1 {
		t.Errorf("the rule's sweep: ReplicaSets listed in %d namespaces and %d times cluster-wide, want 0 and 1", in, all)
	}
	// In a freeze, though, no IDLE policy reads the activity: the index is
	// not listed ahead either.
	at := rolledOut.Add(time.Second)
	freeze := at.Add(-time.Hour).Format(time.RFC3339) + "/" + at.Add(time.Hour).Format(time.RFC3339)
	in, all = lists(func() {
		res := e.Sweep(t, append(args, "--namespace", home, "--dry-run", "--at", at.Format(time.RFC3339), "--freeze", freeze)...)
		if p := res.Pair(t, home, "rule", ruled[0]); p.State != report.StateWaiting || !strings.Contains(p.Message, "is not read in a freeze") {
			t.Errorf("rule on %s in a freeze: %s (%s), want waiting, its activity not read", ruled[0], p.State, p.Message)
		}
	})
	if in != 0 || all != 0 {
		t.Errorf("the rule's sweep in a freeze: ReplicaSets listed in %d namespaces and %d times cluster-wide, want none", in, all)
	}
}

// Once --max-actions is reached, what the sweep's cluster-wide lists say
// is idle is not read again namespace by namespace: the plan is deferred.
func TestIdleBeyondTheCapIsNotConfirmed(t *testing.T) {
	e := setup(t)
	caseID := shared.Namespace(t)
	n := probe.ActivityIndexAfter + 8
	var targets []string
	for range n {
		ns := shared.Namespace(t)
		targets = append(targets, ns)
		createManager(t, managerObj(ns, ns, caseID, []any{idlePolicy("idle a minute", 60, deleteAction)}))
	}
	at := lastCreated(t, targets).Add(2 * time.Minute)
	lists := listsDuring(t, e, func() {
		wantCode(t, e.Sweep(t, "-l", caseLabel+"="+caseID, "--dry-run", "--at", at.Format(time.RFC3339), "--max-actions", "1", "--reclaim=false"), 0)
	})
	inNamespace := lists["replicasets by namespace"]
	// The first 32 are read one by one (one of them takes the one action);
	// of the 8 the index answers, at most those evaluated before that
	// action was counted are read again.
	if inNamespace >= n {
		t.Errorf("ReplicaSets listed in %d namespaces, want fewer than %d: none read again once the cap is reached", inNamespace, n)
	}
}
