package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httputil"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// ruleLabel marks the namespaces a test's rule selects.
const ruleLabel = "nsman.test/rule"

// selecting makes a manager a rule over namespaces labelled ruleLabel=id.
func selecting(id string) func(map[string]any) {
	return func(spec map[string]any) {
		spec["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{ruleLabel: id}}
	}
}

func patterns(p ...any) func(map[string]any) {
	return func(spec map[string]any) { spec["namePatterns"] = p }
}

// labelled makes n test namespaces labelled ruleLabel=id.
func labelled(t *testing.T, id string, n int) []string {
	t.Helper()
	var names []string
	for range n {
		ns := shared.Namespace(t)
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, ruleLabel, id)
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, ns)
	}
	slices.Sort(names)
	return names
}

// pairRecord reads a rule's record on a namespace.
func pairRecord(t *testing.T, namespace string, ruleUID types.UID) (status.PairStatus, *corev1.Namespace) {
	t.Helper()
	ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st status.PairStatus
	if raw, ok := ns.Annotations[status.PairAnnotation(ruleUID)]; ok {
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatalf("record on %s: %v", namespace, err)
		}
	}
	return st, ns
}

// wantPairs checks that rule namespace/name's pair on each of namespaces is
// in state want; when says in which case.
func wantPairs(t *testing.T, res nsmantest.Result, namespace, name string, namespaces []string, want report.State, when string) {
	t.Helper()
	for _, ns := range namespaces {
		if p := res.Pair(t, namespace, name, ns); p.State != want {
			t.Errorf("%s: rule %s on namespace %s: %q (%s), want %s", when, name, ns, p.State, p.Message, want)
		}
	}
}

// setPolicies replaces a manager's policies: a spec edit, a new generation.
func setPolicies(t *testing.T, e *nsmantest.Env, namespace, name string, policies ...any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"policies": policies}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(namespace).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Only an active manager of a namespace shields it from rules: a
// deactivated one does not, and a rule with spec.enforce acts on a
// namespace whatever manager it has.
func TestWhoShieldsANamespaceFromARule(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	targets := labelled(t, caseID, 2)
	dormant, governed := targets[0], targets[1]
	recv := nsmantest.NewReceiver(t)
	// Each target has a manager of its own, living there, that would act in an hour.
	createManager(t, managerObj(dormant, dormant, caseID, []any{ttlPolicy("later", 3600, deleteAction)}, deactivated))
	createManager(t, managerObj(governed, governed, caseID, []any{ttlPolicy("later", 3600, deleteAction)}))
	createManager(t, managerObj(home, "leftovers", caseID, []any{ttlPolicy("report it", 0, webhookAction(recv.URL+"/plain"))}, selecting(caseID)))
	createManager(t, managerObj(home, "enforced", caseID, []any{ttlPolicy("report it", 0, webhookAction(recv.URL+"/enforced"))}, selecting(caseID),
		func(spec map[string]any) { spec["enforce"] = true }))

	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	for _, tt := range []struct{ rule, ns string }{{"leftovers", dormant}, {"enforced", dormant}, {"enforced", governed}} {
		if p := res.Pair(t, home, tt.rule, tt.ns); p.State != report.StateFired {
			t.Errorf("rule %s on %s: %q (%s), want fired", tt.rule, tt.ns, p.State, p.Message)
		}
	}
	if p := res.Pair(t, home, "leftovers", governed); p.State != report.StateGoverned || !strings.Contains(p.Message, governed+"/"+governed) {
		t.Errorf("rule leftovers on %s: %q (%s), want governed by its active manager", governed, p.State, p.Message)
	}
	paths := map[string]int{}
	for _, d := range recv.Deliveries() {
		paths[d.Path]++
	}
	if want := map[string]int{"/plain": 1, "/enforced": 2}; !maps.Equal(paths, want) {
		t.Errorf("deliveries by path %v, want %v", paths, want)
	}
}

// TestRuleActsOnceOnEachNamespaceItMatches: one rule over three labelled
// namespaces and one that a single-target manager governs. The first sweep
// sends one webhook per namespace it may act on, with a key per
// (rule generation, policy, namespace); the second sends nothing and writes
// nothing; an edit of the rule re-arms every namespace.
func TestRuleActsOnceOnEachNamespaceItMatches(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	targets := labelled(t, caseID, 4)
	governed, free := targets[0], targets[1:]
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "leftovers", caseID, []any{ttlPolicy("report it", 0, webhookAction(recv.URL+"/rule"))}, selecting(caseID)))
	createManager(t, managerObj(home, "its-own", caseID, []any{ttlPolicy("later", 3600, deleteAction)}, targeting(governed)))
	sweepArgs := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}

	res := e.Sweep(t, sweepArgs...)
	wantCode(t, res, 0)
	rule := e.Manager(t, home, "leftovers")
	m, problems := policy.Parse(rule)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if g := res.Pair(t, home, "leftovers", governed); g.State != report.StateGoverned || !strings.Contains(g.Message, home+"/its-own") {
		t.Errorf("governed namespace: %q (%s), want governed by %s/its-own", g.State, g.Message, home)
	}
	keys := map[string]bool{}
	for _, ns := range free {
		p := res.Pair(t, home, "leftovers", ns)
		if p.State != report.StateFired || p.Policy != "report it" {
			t.Errorf("namespace %s: %q (%s), want fired by %q", ns, p.State, p.Message, "report it")
		}
		st, obj := pairRecord(t, ns, rule.GetUID())
		if st.Claim != nil || st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.ObservedGeneration != rule.GetGeneration() {
			t.Errorf("record on %s: %+v, want a succeeded action of generation %d and no claim", ns, st, rule.GetGeneration())
		}
		keys[status.PairIdempotencyKey(m, "report it", obj.UID)] = true
	}
	got := recv.Deliveries()
	if len(got) != len(free) {
		t.Fatalf("%d deliveries, want one per namespace the rule may act on (%d)", len(got), len(free))
	}
	for _, d := range got {
		k := d.Header.Get("Idempotency-Key")
		if !keys[k] {
			t.Errorf("Idempotency-Key %q is not one of the pairs' keys", k)
		}
		delete(keys, k)
	}
	st := managerStatus(t, home, "leftovers")
	if st.State != status.StateWatching || st.Rule == nil || st.Rule.Matched != 4 || st.Rule.States[report.StateFired] != 3 || st.Rule.States[report.StateGoverned] != 1 || len(st.Rule.Latest) != 3 {
		t.Errorf("rule status %+v (summary %+v), want watching, 4 matched, 3 fired, 1 governed, 3 latest", st, st.Rule)
	}
	if e.Deactivated(t, home, "leftovers") {
		t.Error("the rule was deactivated; a rule keeps standing")
	}

	before := len(e.Writes(t))
	res = e.Sweep(t, sweepArgs...)
	wantCode(t, res, 0)
	wantPairs(t, res, home, "leftovers", free, report.StateDone, "second sweep")
	if n := len(recv.Deliveries()); n != len(free) {
		t.Errorf("%d deliveries after the second sweep, want still %d", n, len(free))
	}
	statusWrites := 0
	for _, w := range e.Writes(t)[before:] {
		if w.Resource == "namespacemanagers" && w.Subresource == "status" {
			statusWrites++
			continue
		}
		t.Errorf("second sweep wrote %s %s/%s %s", w.Verb, w.Resource, w.Subresource, w.Name)
	}
	// The summary changes once: the pairs went from fired to done.
	if statusWrites > 1 {
		t.Errorf("second sweep wrote the rule's status %d times, want at most once", statusWrites)
	}
	before = len(e.Writes(t))
	res = e.Sweep(t, sweepArgs...)
	wantCode(t, res, 0)
	if w := e.Writes(t)[before:]; len(w) != 0 {
		t.Errorf("a third sweep with nothing due wrote %d times: %+v", len(w), w)
	}

	// A spec edit is a new generation: every namespace is acted on again.
	setPolicies(t, e, home, "leftovers", ttlPolicy("report it again", 0, webhookAction(recv.URL+"/rule")))
	res = e.Sweep(t, sweepArgs...)
	wantCode(t, res, 0)
	for _, ns := range free {
		if p := res.Pair(t, home, "leftovers", ns); p.State != report.StateFired || p.Policy != "report it again" {
			t.Errorf("after the edit, namespace %s: %q (%s), want fired again", ns, p.State, p.Message)
		}
	}
	if n := len(recv.Deliveries()); n != 2*len(free) {
		t.Errorf("%d deliveries after the edit, want %d", n, 2*len(free))
	}
}

// TestRuleDeletesByNamePattern: a rule deletes the namespaces whose names
// match its pattern with one write each (the DELETE, which is its own
// claim), plus one Event and its status for the whole sweep; protected
// namespaces, the rule's own and those of another pattern are left alone.
func TestRuleDeletesByNamePattern(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	prefix := "rp-" + home[len(home)-5:]
	var doomed []string
	for i := range 3 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		createNamespace(t, name)
		doomed = append(doomed, name)
	}
	other := "rq-" + home[len(home)-5:]
	createNamespace(t, other)
	createManager(t, managerObj(home, "by-name", caseID, []any{ttlPolicy("gone at once", 0, deleteAction)},
		patterns(prefix+"-*", "kube-*", home)))
	before := len(e.Writes(t))

	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	for _, ns := range doomed {
		if p := res.Pair(t, home, "by-name", ns); p.State != report.StateFired || !slices.Equal(p.Effects, []string{"delete namespace " + ns}) {
			t.Errorf("namespace %s: %q %q (%s), want fired, deleted", ns, p.State, p.Effects, p.Message)
		}
		if !e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s not deleted", ns)
		}
	}
	for _, entry := range res.Report.Entries {
		if entry.Rule && entry.Name == "by-name" && !slices.Contains(doomed, entry.Target) {
			t.Errorf("rule reported namespace %s (%s), which it must not match", entry.Target, entry.State)
		}
	}
	for _, ns := range []string{other, home, "kube-system"} {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted", ns)
		}
	}
	count := map[string]int{}
	for _, w := range e.Writes(t)[before:] {
		count[w.Verb+" "+w.Resource+"/"+w.Subresource]++
	}
	// A DELETE is its own claim: nothing is written on the namespaces.
	want := map[string]int{"delete namespaces/": 3, "create events/": 1, "patch namespacemanagers/status": 1}
	if !maps.Equal(count, want) {
		t.Errorf("writes %v, want %v", count, want)
	}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := shared.Admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// TestRuleOutsideATrustedNamespaceIsForbidden: a rule elsewhere is refused
// and touches nothing.
func TestRuleOutsideATrustedNamespaceIsForbidden(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 1)
	createManager(t, managerObj(home, "untrusted", home, []any{ttlPolicy("gone at once", 0, deleteAction)}, selecting(home)))
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", "elsewhere")
	wantCode(t, res, 0)
	if got := wantState(t, res, home, "untrusted", report.StateForbidden); !got.Rule {
		t.Errorf("entry %+v does not say it is a rule", got)
	}
	if e.NamespaceGoneOrTerminating(t, targets[0]) {
		t.Error("a forbidden rule deleted a namespace")
	}
}

// TestRulesUnderConcurrentSweeps: four sweeps at once over one rule and
// five namespaces, overlapping in time: each namespace gets exactly one
// delivery.
func TestRulesUnderConcurrentSweeps(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 5)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "race", home, []any{ttlPolicy("once", 0, webhookAction(recv.URL+"/race"))}, selecting(home)))
	var wg sync.WaitGroup
	results := make([]nsmantest.Result, 4)
	spans := nsmantest.NewSpans().StartTogether(len(results))
	for i := range results {
		kubeconfig := spans.Kubeconfig(t, e, fmt.Sprint(i))
		wg.Go(func() {
			results[i] = e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
		})
	}
	wg.Wait()
	spans.Check(t)
	fired := map[string]int{}
	for _, res := range results {
		for _, ns := range targets {
			if res.Pair(t, home, "race", ns).State == report.StateFired {
				fired[ns]++
			}
		}
	}
	perKey := map[string]int{}
	for _, d := range recv.Deliveries() {
		perKey[d.Header.Get("Idempotency-Key")]++
	}
	if len(perKey) != len(targets) {
		t.Errorf("%d distinct keys delivered, want %d", len(perKey), len(targets))
	}
	for k, n := range perKey {
		if n != 1 {
			t.Errorf("key %s delivered %d times", k, n)
		}
	}
	for _, ns := range targets {
		if fired[ns] != 1 {
			t.Errorf("namespace %s reported fired by %d sweeps, want 1", ns, fired[ns])
		}
	}
}

// TestRuleDryRunAndAt: a dry run plans the rule's actions with zero
// mutating requests, --at moves its clock, and --max-actions defers pairs
// without a write; the real sweep after them acts on every namespace.
func TestRuleDryRunAndAt(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 3)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "in-an-hour", home, []any{ttlPolicy("after an hour", 3600, webhookAction(recv.URL+"/dry"))}, selecting(home)))
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}
	before := len(e.Writes(t))

	res := e.Sweep(t, append(args, "--dry-run")...)
	wantCode(t, res, 0)
	for _, ns := range targets {
		if p := res.Pair(t, home, "in-an-hour", ns); p.State != report.StateWaiting || p.Due == nil {
			t.Errorf("dry run now, %s: %q due %v, want waiting with a due time", ns, p.State, p.Due)
		}
	}
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	res = e.Sweep(t, append(args, "--dry-run", "--at", tomorrow)...)
	wantCode(t, res, 0)
	wantPairs(t, res, home, "in-an-hour", targets, report.StatePlanned, "dry run tomorrow")
	if w := e.Writes(t)[before:]; len(w) != 0 {
		t.Errorf("dry runs made %d mutating requests: %+v", len(w), w)
	}
	if n := len(recv.Deliveries()); n != 0 {
		t.Errorf("dry runs delivered %d webhooks", n)
	}

	setPolicies(t, e, home, "in-an-hour", ttlPolicy("at once", 0, webhookAction(recv.URL+"/dry")))
	res = e.Sweep(t, append(args, "--max-actions", "1")...)
	wantCode(t, res, 0)
	if res.Report.Summary.States[report.StateFired] != 1 || res.Report.Summary.States[report.StateDeferred] != 2 {
		t.Errorf("--max-actions 1: states %v, want 1 fired and 2 deferred", res.Report.Summary.States)
	}
	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	if res.Report.Summary.States[report.StateFired] != 2 || res.Report.Summary.States[report.StateDone] != 1 {
		t.Errorf("after the cap: states %v, want 2 fired and 1 done", res.Report.Summary.States)
	}
	if n := len(recv.Deliveries()); n != 3 {
		t.Errorf("%d deliveries, want 3", n)
	}
}

// TestRulePairsSplitAmongShards: three shards together act on each of a
// rule's namespaces exactly once, and only the shard that owns the rule
// writes its status.
func TestRulePairsSplitAmongShards(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 12)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "sharded", home, []any{ttlPolicy("at once", 0, webhookAction(recv.URL+"/shard"))}, selecting(home)))
	fired := map[string]int{}
	for i := range 3 {
		res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home, "--shard-count", "3", "--shard-index", fmt.Sprint(i))
		wantCode(t, res, 0)
		for _, entry := range res.Report.Entries {
			if entry.Rule && entry.State == report.StateFired {
				fired[entry.Target]++
			}
		}
	}
	for _, ns := range targets {
		if fired[ns] != 1 {
			t.Errorf("namespace %s fired by %d shards, want 1", ns, fired[ns])
		}
	}
	if n := len(recv.Deliveries()); n != len(targets) {
		t.Errorf("%d deliveries, want %d", n, len(targets))
	}
	if st := managerStatus(t, home, "sharded"); st.Rule == nil || st.Rule.Matched != len(targets) {
		t.Errorf("rule status %+v, want %d matched", st.Rule, len(targets))
	}

	// Re-armed and swept whole, all 12 fire; the status lists the latest
	// 10 actions, not one per namespace.
	setPolicies(t, e, home, "sharded", ttlPolicy("again", 0, webhookAction(recv.URL+"/shard")))
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	st := managerStatus(t, home, "sharded")
	if st.Rule == nil || st.Rule.States[report.StateFired] != len(targets) || len(st.Rule.Latest) != 10 {
		t.Errorf("rule status %+v, want %d fired and the latest 10 actions", st.Rule, len(targets))
	}
}

// TestRuleMinChecksProgressPerPair: a PODS_SUCCEED rule with minChecks 2
// records each namespace's progress on that namespace; a namespace whose
// pod is still running records nothing, and fires only once its pod
// succeeded twice in a row.
func TestRuleMinChecksProgressPerPair(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 2)
	passing, running := targets[0], targets[1]
	podWithPhase(t, passing, "tests", map[string]string{"role": "tests"}, corev1.PodSucceeded)
	podWithPhase(t, running, "tests", map[string]string{"role": "tests"}, corev1.PodRunning)
	createManager(t, managerObj(home, "checks", home, []any{podsPolicy("tests passed", map[string]any{"role": "tests"}, deleteAction,
		func(p map[string]any) { p["minChecks"] = int64(2) })}, selecting(home)))
	rule := e.Manager(t, home, "checks")
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "checks", passing); p.State != report.StateWaiting {
		t.Fatalf("first check on %s: %q (%s), want waiting", passing, p.State, p.Message)
	}
	if st, _ := pairRecord(t, passing, rule.GetUID()); st.Checks["tests passed"].Passed != 1 {
		t.Errorf("record on %s: %+v, want one check passed", passing, st)
	}
	if _, ns := pairRecord(t, running, rule.GetUID()); ns.Annotations[status.PairAnnotation(rule.GetUID())] != "" {
		t.Errorf("a namespace with nothing to keep got a record: %v", ns.Annotations)
	}
	time.Sleep(2100 * time.Millisecond) // periodSeconds 1, on the API server's clock of whole seconds
	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "checks", passing); p.State != report.StateFired {
		t.Errorf("second check on %s: %q (%s), want fired", passing, p.State, p.Message)
	}
	if p := res.Pair(t, home, "checks", running); p.State != report.StateWaiting || e.NamespaceGoneOrTerminating(t, running) {
		t.Errorf("%s with a running pod: %q (%s), want waiting", running, p.State, p.Message)
	}
}

// TestRuleEventsOnlyOnChange: a rule whose webhook fails on two namespaces
// gets one Warning Event for the sweep, naming both; the next sweep fails
// the same way and writes no Event; once the receiver answers, one Normal
// Event says the rule acted on both.
func TestRuleEventsOnlyOnChange(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 2)
	recv := nsmantest.NewReceiver(t)
	recv.SetStatus(400) // refused for good: not retried
	createManager(t, managerObj(home, "noisy", home, []any{ttlPolicy("at once", 0, webhookAction(recv.URL+"/events"))}, selecting(home)))
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}
	events := func() []string {
		t.Helper()
		list, err := shared.Admin.EventsV1().Events(home).List(t.Context(), metav1.ListOptions{FieldSelector: "regarding.name=noisy"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range list.Items {
			out = append(out, ev.Type+" "+ev.Reason+": "+ev.Note)
		}
		slices.Sort(out)
		return out
	}

	res := e.Sweep(t, args...)
	wantCode(t, res, 1)
	got := events()
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning Failed: failed on 2 namespace(s)") || !strings.Contains(got[0], targets[0]) || !strings.Contains(got[0], targets[1]) {
		t.Fatalf("events after the first failure: %q, want one Warning naming both namespaces", got)
	}
	noisy := e.Manager(t, home, "noisy").GetUID()
	for _, ns := range targets {
		letPairBackoffPass(t, ns, noisy)
	}
	before := len(e.Writes(t))
	res = e.Sweep(t, args...)
	wantCode(t, res, 1)
	if got := events(); len(got) != 1 {
		t.Errorf("events after the same failure again: %q, want still one", got)
	}
	for _, w := range e.Writes(t)[before:] {
		if w.Resource == "namespacemanagers" {
			t.Errorf("the same failure again rewrote the rule: %s %s/%s", w.Verb, w.Resource, w.Subresource)
		}
	}
	recv.SetStatus(200)
	for _, ns := range targets {
		letPairBackoffPass(t, ns, noisy)
	}
	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	got = events()
	if len(got) != 2 || !strings.HasPrefix(got[0], "Normal Fired: acted on 2 namespace(s)") {
		t.Errorf("events after success: %q, want a Normal one for both namespaces", got)
	}
}

// TestRuleGovernanceAndPause: a manager the guards refuse (in an untrusted
// tenant namespace, aiming at another namespace) shields nothing from a
// rule; and pausing and resuming the rule re-arms none of its namespaces.
func TestRuleGovernanceAndPause(t *testing.T) {
	e := setup(t)
	home, tenant := shared.Namespace(t), shared.Namespace(t)
	targets := labelled(t, home, 2)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "pausable", home, []any{ttlPolicy("at once", 0, webhookAction(recv.URL+"/pause"))}, selecting(home)))
	createManager(t, managerObj(tenant, "shield", home, []any{ttlPolicy("never", 86400, deleteAction)}, targeting(targets[0])))
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	wantState(t, res, tenant, "shield", report.StateForbidden)
	wantPairs(t, res, home, "pausable", targets, report.StateFired, "a forbidden manager governs nothing")
	for _, deactivated := range []bool{true, false} {
		patch := fmt.Sprintf(`{"spec":{"deactivated":%t}}`, deactivated)
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Patch(t.Context(), "pausable", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		res = e.Sweep(t, args...)
		wantCode(t, res, 0)
	}
	wantPairs(t, res, home, "pausable", targets, report.StateDone, "after pause and resume")
	if n := len(recv.Deliveries()); n != len(targets) {
		t.Errorf("%d deliveries, want %d: resuming re-sent them", n, len(targets))
	}
}

// TestRuleClaimSurvivesPauseAndResume: a sweep died holding a claim on a
// pair (its webhook may have been sent); the rule is paused and resumed
// (two generations later) before the claim expires. The next sweep
// completes the claim under the dead sweep's Idempotency-Key instead of
// firing anew.
func TestRuleClaimSurvivesPauseAndResume(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	target := labelled(t, home, 1)[0]
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "claimed", home, []any{ttlPolicy("at once", 0, webhookAction(recv.URL+"/claimed"))}, selecting(home)))
	rule := e.Manager(t, home, "claimed")
	m, _ := policy.Parse(rule)
	_, ns := pairRecord(t, target, rule.GetUID())
	dead := status.PairStatus{Rule: home + "/claimed", Progress: status.Progress{Claim: &status.Claim{Policy: "at once", Action: "WEBHOOK", Sweep: "dead",
		Expires: time.Now().Add(-time.Minute).UTC(), Generation: rule.GetGeneration(), TargetUID: ns.UID, Spec: m.Arming}}}
	raw, _ := json.Marshal(dead)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{status.PairAnnotation(rule.GetUID()): string(raw)}}})
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), target, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, deactivated := range []bool{true, false} {
		p := fmt.Sprintf(`{"spec":{"deactivated":%t}}`, deactivated)
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Patch(t.Context(), "claimed", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "claimed", target); p.State != report.StateFired || !strings.Contains(p.Message, "completing the expired claim of sweep dead") {
		t.Errorf("pair: %q (%s), want the dead sweep's claim completed", p.State, p.Message)
	}
	got := recv.Deliveries()
	if want := status.PairIdempotencyKey(m, "at once", ns.UID); len(got) != 1 || got[0].Header.Get("Idempotency-Key") != want {
		t.Errorf("deliveries %d, want one under the dead sweep's key %s", len(got), want)
	}
}

// TestRulesShareANamespace: two rules due on the same namespaces both act
// in one sweep. Each claims a namespace with a patch conditional on the
// version the sweep listed, so the second claim finds the first one's
// write; the namespace is read again and, its own record unchanged,
// claimed anew. A write by someone else between the listing and the claim
// (an annotation, here, added by the proxy before nsman's first write) is
// no reason to wait either.
func TestRulesShareANamespace(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	targets := labelled(t, home, 3)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "tell-qa", home, []any{ttlPolicy("now", 0, webhookAction(recv.URL+"/qa"))}, selecting(home)))
	createManager(t, managerObj(home, "tell-ops", home, []any{ttlPolicy("now", 0, webhookAction(recv.URL+"/ops"))}, selecting(home)))

	var touched sync.Once
	var touchErr error
	kubeconfig := e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") {
				touched.Do(func() {
					patch := []byte(`{"metadata":{"annotations":{"example.com/touched":"yes"}}}`)
					_, touchErr = shared.Admin.CoreV1().Namespaces().Patch(context.Background(), path.Base(r.URL.Path), types.MergePatchType, patch, metav1.PatchOptions{})
				})
			}
			p.ServeHTTP(w, r)
		})
	})
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	if touchErr != nil {
		t.Fatal(touchErr)
	}
	for _, rule := range []string{"tell-qa", "tell-ops"} {
		wantPairs(t, res, home, rule, targets, report.StateFired, "two rules due on one namespace")
	}
	byPath := map[string]int{}
	for _, d := range recv.Deliveries() {
		byPath[d.Path]++
	}
	if want := map[string]int{"/qa": len(targets), "/ops": len(targets)}; !maps.Equal(byPath, want) {
		t.Errorf("deliveries by path: %v, want %v", byPath, want)
	}
}

// TestStaleRecordsOfGoneRules: a rule deleted leaves its records on the
// namespaces it matched. A sweep that lists every manager (here, a -l sweep
// with a rule, which lists the rest for the namespaces they govern)
// removes the records of rules that are gone written last more than
// StaleRecordAge ago, wherever they are, and keeps a younger one (a rule
// created after the listing may have written it) and those of managers
// that stand, rules or not. A dry run counts them and removes nothing.
func TestStaleRecordsOfGoneRules(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	matched, elsewhere := labelled(t, home, 1)[0], shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "standing", home, []any{ttlPolicy("now", 0, webhookAction(recv.URL+"/standing"))}, selecting(home)))
	storedPair := func(rule string, at time.Time) string {
		data, err := json.Marshal(status.PairStatus{Rule: rule, Progress: status.Progress{ObservedGeneration: 1,
			LastAction: &status.LastAction{Policy: "now", Action: policy.ActionWebhook, Result: report.ResultSucceeded, Time: at.UTC()}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	old, young := time.Now().Add(-2*record.StaleRecordAge), time.Now().Add(-time.Minute)
	gone, recent := status.PairAnnotationPrefix+"0f0e0d0c-gone", status.PairAnnotationPrefix+"0f0e0d0c-recent"
	annotate := func(ns string, annotations map[string]string) {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A manager that is no rule now may be one again (its selector
	// restored): its records stay.
	createManager(t, managerObj(home, "was-a-rule", home, []any{ttlPolicy("later", 3600, deleteAction)}, targeting(home)))
	wasRule := status.PairAnnotation(e.Manager(t, home, "was-a-rule").GetUID())
	annotate(matched, map[string]string{gone: storedPair(home+"/gone", old), recent: storedPair(home+"/recent", young), wasRule: storedPair(home+"/was-a-rule", old)})
	annotate(elsewhere, map[string]string{gone: storedPair(home+"/gone", old)})
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}
	has := func(ns, key string) bool {
		_, obj := pairRecord(t, ns, "")
		_, ok := obj.Annotations[key]
		return ok
	}

	res := e.Sweep(t, append(args, "--dry-run")...)
	wantCode(t, res, 0)
	if got := res.Report.Summary.StaleRecords; got < 2 {
		t.Errorf("dry run: summary.staleRecords %d, want at least 2", got)
	}
	if !has(matched, gone) || !has(elsewhere, gone) {
		t.Fatalf("a dry run removed a record")
	}

	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	if got := res.Report.Summary.StaleRecords; got < 2 {
		t.Errorf("summary.staleRecords %d, want at least 2", got)
	}
	rule := e.Manager(t, home, "standing")
	for _, c := range []struct {
		ns, key string
		want    bool
	}{
		{matched, gone, false},
		{elsewhere, gone, false},
		{matched, recent, true},
		{matched, wasRule, true},
		{matched, status.PairAnnotation(rule.GetUID()), true},
	} {
		if got := has(c.ns, c.key); got != c.want {
			t.Errorf("namespace %s has %s: %v, want %v", c.ns, c.key, got, c.want)
		}
	}
	// Nothing is left to remove.
	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	if got := res.Report.Summary.StaleRecords; got != 0 {
		t.Errorf("third sweep: summary.staleRecords %d, want 0", got)
	}
}
