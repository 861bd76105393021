package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// dueManagers are n namespaces team-0 … whose managers' TTL has passed.
func dueManagers(n int) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		name := fmt.Sprintf("team-%d", i)
		out = append(out, namespace(name, 2*time.Hour, nil, nil), manager(name, name, map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}))
	}
	return out
}

// TestRunInterrupted: a sweep interrupted during its first action finishes
// that action, starts none after it, reports the managers it did not get
// to, and says it was interrupted.
func TestRunInterrupted(t *testing.T) {
	f := newFakeAPI(t, true, dueManagers(3)...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.dyn.PrependReactor("delete", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		cancel()
		return false, nil, nil
	})
	rep, err := sweepOf(t, f, Config{Concurrency: 1, SkipReclaim: true}, nil).Run(ctx)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	if got := f.actions("delete", "namespaces"); len(got) != 1 {
		t.Errorf("deleted %v, want the one under way alone", got)
	}
	if fired, deferred := rep.Summary.States[report.StateFired], rep.Summary.States[report.StateDeferred]; fired != 1 || deferred != 2 || len(rep.Entries) != 3 {
		t.Errorf("%d fired, %d deferred of %d, want 1 and 2 of 3", fired, deferred, len(rep.Entries))
	}
	for _, e := range rep.Entries {
		if e.State == report.StateDeferred && !strings.Contains(e.Message, "interrupted") {
			t.Errorf("%s deferred: %s", e.Name, e.Message)
		}
	}
}

// TestRunSelectedWithRules: a sweep of the managers a selector picks lists
// every manager besides for its rules: a namespace whose own manager was
// not selected is still governed by it.
func TestRunSelectedWithRules(t *testing.T) {
	selected := map[string]string{"sweep": "this"}
	r := rule("e2e-leftovers", ttl(60, "DELETE", nil))
	r.SetLabels(selected)
	own := manager("team-a", "team-a", map[string]any{"policies": []any{ttl(60, "DELETE", nil)}})
	own.SetLabels(selected)
	f := newFakeAPI(t, true, namespace("platform", 48*time.Hour, nil, nil), r, namespace("team-a", 2*time.Hour, nil, nil), own,
		namespace("e2e-governed", 2*time.Hour, nil, nil), manager("e2e-governed", "e2e-governed", map[string]any{"policies": []any{ttl(86400, "DELETE", nil)}}),
		namespace("e2e-free", 2*time.Hour, nil, nil))
	rep, err := sweepOf(t, f, Config{LabelSelector: "sweep=this", TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "platform", "e2e-leftovers", "e2e-governed"); e.State != report.StateGoverned {
		t.Errorf("e2e-governed: %s (%s), want governed by its own manager, not selected", e.State, e.Message)
	}
	if e := entryOf(t, rep, "platform", "e2e-leftovers", "e2e-free"); e.State != report.StateFired {
		t.Errorf("e2e-free: %s (%s), want fired", e.State, e.Message)
	}
	if e := entryOf(t, rep, "team-a", "team-a", ""); e.State != report.StateFired {
		t.Errorf("team-a: %s (%s), want fired", e.State, e.Message)
	}
	for _, e := range rep.Entries {
		if e.Namespace == "e2e-governed" {
			t.Errorf("a manager not selected was handled: %+v", e)
		}
	}
	// Without a selector nor a failure, the sweep lists once; with one,
	// every manager again for the rules.
	if got := f.actions("list", managersGVR.Resource); len(got) != 2 {
		t.Errorf("managers listed %d times, want 2", len(got))
	}
}

// TestRunOriginalCRD: NamespaceManagers of the original CRD, without a
// status subresource, keep their status in an annotation, written with
// spec.deactivated in one patch once a final action is done.
func TestRunOriginalCRD(t *testing.T) {
	f := newFakeAPI(t, false, namespace("ops", 48*time.Hour, nil, nil), namespace("team-b", 2*time.Hour, nil, nil),
		manager("ops", "b-expiry", map[string]any{"namespace": "team-b", "policies": []any{ttl(60, "DELETE", nil)}}))
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"ops"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "ops", "b-expiry", ""); e.State != report.StateFired {
		t.Errorf("%s (%s), want fired", e.State, e.Message)
	}
	if got, sub := f.actions("patch", managersGVR.Resource), f.actions("patch", managersGVR.Resource+"/status"); len(got) != 1 || len(sub) != 0 {
		t.Errorf("patched %v and the status subresource %v, want one patch of the manager", got, sub)
	}
	m := f.get(t, managersGVR, "ops", "b-expiry")
	if deactivated, _, _ := unstructured.NestedBool(m.Object, "spec", "deactivated"); !deactivated || !strings.Contains(m.GetAnnotations()[status.StatusAnnotation], `"state":"fired"`) {
		t.Errorf("deactivated %v, status annotation %q; want deactivated and fired", deactivated, m.GetAnnotations()[status.StatusAnnotation])
	}
}

// TestRunRemovesStaleRecords: a sweep of every manager removes the records
// of a rule that is gone from the namespaces, once they are an hour old.
func TestRunRemovesStaleRecords(t *testing.T) {
	written := func(ago time.Duration) string {
		return fmt.Sprintf(`{"rule":"platform/gone","written":%q}`, sweepAt.Add(-ago).Format(time.RFC3339))
	}
	goneKey := status.PairAnnotation("uid-gone")
	f := newFakeAPI(t, true, append(dueManagers(1),
		namespace("e2e-old", 2*time.Hour, nil, map[string]string{goneKey: written(2 * time.Hour), "keep": "me"}),
		namespace("e2e-recent", 2*time.Hour, nil, map[string]string{goneKey: written(time.Minute)}))...)
	rep, err := sweepOf(t, f, Config{SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.StaleRecords != 1 {
		t.Errorf("%d stale records removed, want 1", rep.Summary.StaleRecords)
	}
	if a := f.get(t, namespacesGVR, "", "e2e-old").GetAnnotations(); a[goneKey] != "" || a["keep"] != "me" {
		t.Errorf("e2e-old's annotations %v, want the record gone and the rest kept", a)
	}
	if a := f.get(t, namespacesGVR, "", "e2e-recent").GetAnnotations(); a[goneKey] == "" {
		t.Error("a record written a minute ago was removed")
	}
}

// TestRunNotifies: an action that fired is notified to --notify-url.
func TestRunNotifies(t *testing.T) {
	var got atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer receiver.Close()
	f := newFakeAPI(t, true, append(dueManagers(2), namespace("team-later", time.Minute, nil, nil),
		manager("team-later", "team-later", map[string]any{"policies": []any{ttl(3600, "DELETE", nil)}}))...)
	rep, err := sweepOf(t, f, Config{NotifyURL: receiver.URL + "/notify", SkipReclaim: true}, webhook.NewSender(webhook.Options{MaxAttempts: 1})).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got.Load() != 2 || rep.Summary.Notifications["sent"] != 2 || rep.Summary.Notifications["failed"] != 0 {
		t.Errorf("receiver got %d, summary %v; want 2 sent", got.Load(), rep.Summary.Notifications)
	}
}

// TestRunFrozen: within a freeze nothing acts, and the report says until
// when.
func TestRunFrozen(t *testing.T) {
	f := newFakeAPI(t, true, dueManagers(2)...)
	freeze := decide.Freeze{Start: sweepAt.Add(-time.Hour), End: sweepAt.Add(time.Hour)}
	rep, err := sweepOf(t, f, Config{Freezes: []decide.Freeze{freeze}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.FrozenUntil == nil || !rep.Summary.FrozenUntil.Equal(freeze.End) || rep.Summary.States[report.StateFired] != 0 {
		t.Errorf("frozen until %v, states %v; want until %s, nothing fired", rep.Summary.FrozenUntil, rep.Summary.States, freeze.End)
	}
	if got := f.actions("delete", "namespaces"); len(got) != 0 {
		t.Errorf("deleted %v in a freeze", got)
	}
}

// TestRunStuck: a namespace a DELETE rule matches that is stuck in
// Terminating past --stuck-after gets an entry that says why, and the
// rule's status lists it.
func TestRunStuck(t *testing.T) {
	stuck := namespace("e2e-stuck", 3*time.Hour, nil, nil)
	since := metav1.NewTime(sweepAt.Add(-time.Hour))
	stuck.SetDeletionTimestamp(&since)
	stuck.SetFinalizers([]string{"kubernetes"})
	_ = unstructured.SetNestedSlice(stuck.Object, []any{map[string]any{"type": "NamespaceFinalizersRemaining", "status": "True",
		"reason": "SomeFinalizersRemain", "message": "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"}}, "status", "conditions")
	_ = unstructured.SetNestedField(stuck.Object, "Terminating", "status", "phase")
	f := newFakeAPI(t, true, namespace("platform", 48*time.Hour, nil, nil), rule("e2e-leftovers", ttl(60, "DELETE", nil)), stuck)
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e := entryOf(t, rep, "platform", "e2e-leftovers", "e2e-stuck")
	if e.State != report.StateTargetTerminating || e.Stuck == nil || rep.Summary.Stuck != 1 {
		t.Fatalf("e2e-stuck: %s, stuck %+v, summary %d (%s)", e.State, e.Stuck, rep.Summary.Stuck, e.Message)
	}
	var st status.Status
	obj := f.get(t, managersGVR, "platform", "e2e-leftovers").Object["status"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &st); err != nil {
		t.Fatal(err)
	}
	if st.Rule == nil || len(st.Rule.Stuck) != 1 || st.Rule.Stuck[0].Namespace != "e2e-stuck" {
		t.Errorf("rule status lists stuck %+v", st.Rule)
	}
}

// TestNewRefusesBadConfig: a configuration that cannot run is refused.
func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{At: sweepAt},
		{MaxActions: -1},
		{Concurrency: -1},
		{ClaimTTL: time.Second},
		{NotifyFormat: "xml"},
		{MaxHold: -1},
		{StuckAfter: -1},
		{ArgoCDNamespace: "Argo_CD"},
		{Freezes: []decide.Freeze{{Start: sweepAt, End: sweepAt}}},
		{ShardCount: -1},
		{ShardIndex: 2, ShardCount: 2},
	} {
		if _, err := New(cfg, newFakeAPI(t, true).clients(t), nil, nil); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// pod is pod namespace/name labelled, in phase.
func pod(namespace, name string, labels map[string]string, phase string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": phase}}}
	p.SetNamespace(namespace)
	p.SetName(name)
	p.SetLabels(labels)
	p.SetCreationTimestamp(metav1.NewTime(sweepAt.Add(-time.Hour)))
	return p
}

// TestRunStoredManagers: managers as the API server stores them after
// kubectl apply and a sweep (listpagetest) wait while a pod of theirs has
// not succeeded, and delete their namespace once every one has.
func TestRunStoredManagers(t *testing.T) {
	objs := []runtime.Object{}
	for i := 1; i <= 2; i++ {
		m := &unstructured.Unstructured{}
		if err := m.UnmarshalJSON([]byte(listpagetest.StoredManager(i))); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, m, namespace(m.GetNamespace(), 240*time.Hour, nil, nil))
	}
	tests := map[string]string{"role": "e2e-test"}
	objs = append(objs, pod("team-00001", "e2e", tests, "Running"), pod("team-00002", "e2e", tests, "Succeeded"),
		pod("team-00002", "web", map[string]string{"app": "web"}, "Running"))
	f := newFakeAPI(t, true, objs...)
	rep, err := sweepOf(t, f, Config{SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "team-00001", "team-00001", ""); e.State != report.StateWaiting || !strings.Contains(e.Message, "pod e2e has not succeeded") {
		t.Errorf("a test pod running: %s (%s), want waiting on it", e.State, e.Message)
	}
	if e := entryOf(t, rep, "team-00002", "team-00002", ""); e.State != report.StateFired || e.Action != "DELETE" {
		t.Errorf("every test pod succeeded: %s %s (%s), want fired DELETE", e.State, e.Action, e.Message)
	}
	if got := f.actions("delete", "namespaces"); len(got) != 1 || got[0] != "/team-00002" {
		t.Errorf("deleted %v, want team-00002", got)
	}
}

// TestRunRuleScreenedWithIndex: a rule whose last status counts more than
// probe.PodIndexAfter namespaces is screened with the sweep's index of pods
// that have not succeeded, then confirmed one namespace at a time: it
// deletes the one namespace whose tests passed and waits on the rest.
func TestRunRuleScreenedWithIndex(t *testing.T) {
	const n = probe.PodIndexAfter + 20
	tests := map[string]string{"role": "e2e-test"}
	r := rule("e2e-leftovers", policyOf("tests passed", "PODS_SUCCEED", map[string]any{"podLabels": map[string]any{"role": "e2e-test"}}, "DELETE", nil))
	r.Object["status"] = map[string]any{"rule": map[string]any{"matched": int64(n), "states": map[string]any{"waiting": int64(n)}}}
	objs := []runtime.Object{namespace("platform", 48*time.Hour, nil, nil), r}
	for i := range n {
		name, phase := fmt.Sprintf("e2e-%03d", i), "Running"
		if i == 7 {
			phase = "Succeeded"
		}
		objs = append(objs, namespace(name, 2*time.Hour, nil, nil), pod(name, "tests", tests, phase))
	}
	f := newFakeAPI(t, true, objs...)
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fired, waiting := rep.Summary.States[report.StateFired], rep.Summary.States[report.StateWaiting]; fired != 1 || waiting != n-1 {
		t.Errorf("%d fired, %d waiting, want 1 and %d", fired, waiting, n-1)
	}
	if got := f.actions("delete", "namespaces"); len(got) != 1 || got[0] != "/e2e-007" {
		t.Errorf("deleted %v, want e2e-007", got)
	}
	// The pods were listed cluster-wide once (the index), and in a
	// namespace only to confirm the one the index let pass.
	if clusterWide, inNamespace := countLists(f.actions("list", "pods")); clusterWide != 1 || inNamespace > 1 {
		t.Errorf("pods listed cluster-wide %d times, in a namespace %d times; want once, and at most once", clusterWide, inNamespace)
	}
}

// countLists counts lists cluster-wide and in a namespace, of f.actions.
func countLists(namespaces []string) (clusterWide, inNamespace int) {
	for _, ns := range namespaces {
		if ns == "" {
			clusterWide++
		} else {
			inNamespace++
		}
	}
	return clusterWide, inNamespace
}

// TestRunRuleGates: a paused rule, an invalid one and one whose
// namespaces cannot be listed each get one entry of their own, and reach
// no namespace.
func TestRunRuleGates(t *testing.T) {
	paused := rule("paused", ttl(60, "DELETE", nil))
	paused.Object["spec"].(map[string]any)["deactivated"] = true
	objs := func() []runtime.Object {
		return []runtime.Object{namespace("platform", 48*time.Hour, nil, nil), namespace("e2e-a", 2*time.Hour, nil, nil),
			paused.DeepCopy(), rule("broken", map[string]any{"name": "no condition"}), rule("fine", ttl(60, "DELETE", nil))}
	}
	f := newFakeAPI(t, true, objs()...)
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]report.State{"paused": report.StateDeactivated, "broken": report.StateInvalid} {
		if e := entryOf(t, rep, "platform", name, ""); e.State != want || e.Target != "" {
			t.Errorf("%s: %s on %q (%s), want %s on no namespace", name, e.State, e.Target, e.Message, want)
		}
	}
	if e := entryOf(t, rep, "platform", "fine", "e2e-a"); e.State != report.StateFired {
		t.Errorf("fine: %s (%s), want fired", e.State, e.Message)
	}

	f = newFakeAPI(t, true, objs()...)
	f.dyn.PrependReactor("list", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is on fire")
	})
	if rep, err = sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "platform", "fine", ""); e.State != report.StateFailed || !strings.Contains(e.Message, "list namespaces") {
		t.Errorf("namespaces not listed: %s (%s), want failed", e.State, e.Message)
	}
	if deleted, patched := f.actions("delete", "namespaces"), f.actions("patch", "namespaces"); len(deleted)+len(patched) != 0 {
		t.Errorf("without the namespaces listed, deleted %v and patched %v", deleted, patched)
	}
}

// TestRunNoManagers: a sweep that lists no manager reports none, and the
// trusted namespaces that do not exist: from its list of every namespace
// (which stale records need), else (a selector) asked for by name.
func TestRunNoManagers(t *testing.T) {
	for _, tt := range []struct {
		selector string
		lists    int
	}{{"", 1}, {"sweep=this", 2}} {
		f := newFakeAPI(t, true, namespace("ops", 48*time.Hour, nil, nil), namespace("team-a", time.Hour, nil, nil))
		rep, err := sweepOf(t, f, Config{LabelSelector: tt.selector, TrustedNamespaces: []string{"ops", "missing"}}, nil).Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Entries) != 0 || !rep.Summary.Now.Equal(sweepAt) || len(rep.Summary.MissingTrusted) != 1 || rep.Summary.MissingTrusted[0] != "missing" {
			t.Errorf("selector %q: %d entries at %s, missing trusted %v; want none at %s, missing alone", tt.selector, len(rep.Entries), rep.Summary.Now, rep.Summary.MissingTrusted, sweepAt)
		}
		if got := f.actions("list", "namespaces"); len(got) != tt.lists {
			t.Errorf("selector %q: namespaces listed %d times, want %d", tt.selector, len(got), tt.lists)
		}
	}
}

// TestSweepAsksItsOwnerIndex: the evaluator of a sweep asks the sweep's
// owner index, which reads an app name alone as an Application in
// --argocd-namespace (default argocd).
func TestSweepAsksItsOwnerIndex(t *testing.T) {
	ns := cluster.Namespace{Name: "pr-1", OwnerMarkers: cluster.AnnotationsOf(map[string]string{"argocd.argoproj.io/tracking-id": "pr-1:/Namespace:pr-1/pr-1"})}
	for argoCD, want := range map[string]string{"": "applications.argoproj.io/argocd/pr-1", "gitops": "applications.argoproj.io/gitops/pr-1"} {
		s, err := New(Config{ArgoCDNamespace: argoCD}, newFakeAPI(t, true).clients(t), nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		r := &sweepRun{}
		s.probe(r)
		s.begin(r)
		if r.eval.Owners == nil {
			t.Fatal("the evaluator has no owner index")
		}
		if got := r.eval.Owners.Of(t.Context(), ns, ""); got == nil || got.Ref != want {
			t.Errorf("--argocd-namespace %q: owner %+v, want %s", argoCD, got, want)
		}
	}
}

// TestRunRuleListsOwnersAhead: a rule whose last status counts a namespace
// evaluated, and that weighs owners, has the sweep list the Applications
// (which create namespaces) beside the namespaces, once, even where no
// namespace it evaluates needs them (its only namespace names an owner of a
// kind that does not exist); no other owner kind is listed.
func TestRunRuleListsOwnersAhead(t *testing.T) {
	r := rule("e2e-orphans", policyOf("owner gone", "OWNER_GONE", map[string]any{"graceSeconds": int64(0)}, "DELETE", nil))
	r.Object["status"] = map[string]any{"rule": map[string]any{"matched": int64(1), "states": map[string]any{"waiting": int64(1)}}}
	marked := map[string]string{policy.OwnerAnnotation: "gizmos.nowhere.example/team/g"}
	f := newFakeAPI(t, true, namespace("platform", 48*time.Hour, nil, nil), r, namespace("e2e-1", 2*time.Hour, nil, marked))
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "platform", "e2e-orphans", "e2e-1"); e.State != report.StateWaiting || !strings.Contains(e.Message, "does not exist") {
		t.Errorf("e2e-1: %s (%s), want waiting on an owner of a kind that does not exist", e.State, e.Message)
	}
	listed := map[string]int{}
	for _, p := range f.paths["GET"] {
		if strings.HasSuffix(p, "applications") || strings.HasSuffix(p, "kustomizations") || strings.HasSuffix(p, "helmreleases") {
			listed[p]++
		}
	}
	if want := map[string]int{"/apis/argoproj.io/v1alpha1/applications": 1}; !maps.Equal(listed, want) {
		t.Errorf("owner kinds listed %v, want %v: the Applications ahead, once", listed, want)
	}
}
