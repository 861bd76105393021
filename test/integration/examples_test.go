package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestExamplesPlayOut applies every manifest in examples/ under nsman's CRD
// and checks that each manager does what its file says: the single-target
// managers all together through nsmantest's PlayOut, and each file that
// holds a rule on its own through playOutRule. The GitOps projects' CRDs
// are installed, as where those projects run: the owners the examples'
// markers name are read on them (an owner whose kind is not served is
// unknown, and never gone).
func TestExamplesPlayOut(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	files, err := filepath.Glob(filepath.Join(nsmantest.RepoRoot(), "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var all []*unstructured.Unstructured
	withRules := map[string][]*unstructured.Unstructured{} // by file name
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := nsmantest.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if slices.Contains(sleepExamples, filepath.Base(f)) {
			continue // TestSleepExamplesPlayOut plays them out
		}
		if slices.Contains(warnExamples, filepath.Base(f)) {
			continue // TestWarnExamplesPlayOut plays them out
		}
		if slices.Contains(trafficExamples, filepath.Base(f)) {
			t.Logf("%s reads traffic: test/traffic plays it out, with a Prometheus", filepath.Base(f))
			continue
		}
		if slices.ContainsFunc(objs, isRuleObj) {
			withRules[filepath.Base(f)] = objs
			continue
		}
		all = append(all, objs...)
	}
	e.PlayOut(t, nsmantest.NewReceiver(t), all)
	for _, name := range slices.Sorted(maps.Keys(withRules)) {
		t.Run(name, func(t *testing.T) {
			playOutRule(t, e, nsmantest.NewReceiver(t), withRules[name])
		})
	}
}

// trafficExamples are the examples whose policies read traffic, which
// test/traffic's TestTrafficExamplePlaysOut plays out with a Prometheus.
var trafficExamples = []string{"sleep-idle-traffic.yaml"}

func isRuleObj(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == policy.Kind && nsmantest.IsRule(obj)
}

// ruleExampleHome is where an example's rule lives: the namespace deploy/
// installs nsman into, which nsman trusts by default as its own, so that
// the example works as shipped there (examples/README.md says where to put
// it with the chart).
const ruleExampleHome = "namespace-manager"

// playOutRule applies a manifest whose managers are all rules (shortened as
// PlayOut shortens them, labelled for this run), sweeps every second as
// nsman's ServiceAccount with --trusted-namespaces namespace-manager until
// each rule has acted on every namespace of the manifest it matches, and
// checks that:
//   - before every sweep, a dry run writes nothing and plans what the sweep
//     then does;
//   - each rule acts on each namespace it matches once, by a policy that
//     held: DELETE deletes it; PODS_SUCCEED fires only once every matching
//     pod has succeeded, after a sweep saw them pending; IDLE fires only
//     once its idle time has passed since a last activity no older than
//     anything created in the namespace before the sweep, saying so where
//     it ignored a touched annotation that does not parse or is too far
//     ahead, and only there; WEBHOOK posts once
//     for that namespace, with the pair's Idempotency-Key;
//   - it touches no other namespace, in the manifest or not, is never
//     deactivated, and writes one Event per sweep in which it acted, and
//     one per sweep in which it found an annotation newly ignored;
//   - its status says it is watching and lists its actions;
//   - then one sweep writes at most each rule's status, and the next one
//     nothing at all.
func playOutRule(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, objs []*unstructured.Unstructured) {
	t.Helper()
	run := fmt.Sprintf("rule-run-%d", time.Now().UnixNano())
	protected := append(sweep.ProtectedFloor(), "default", "namespace-manager") // with nsman's default flags
	rules := map[string]policy.Manager{}                                        // by namespace/name
	expected := map[string]bool{}                                               // namespace/name/target
	matchedAny := map[string]bool{}                                             // namespaces some rule matches
	var namespaces []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" {
			namespaces = append(namespaces, obj)
		}
	}
	for _, obj := range objs {
		if obj.GetKind() != policy.Kind {
			continue
		}
		id := obj.GetNamespace() + "/" + obj.GetName()
		if !nsmantest.IsRule(obj) {
			t.Fatalf("manager %s is no rule: a manifest with a rule is played out on its own, and holds only rules", id)
		}
		if obj.GetNamespace() != ruleExampleHome {
			t.Fatalf("rule %s lives outside %s, which deploy/'s nsman trusts by default", id, ruleExampleHome)
		}
		nsmantest.Shorten(t, shared.Admin, obj, recv)
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[nsmantest.PlayOutLabel] = run
		obj.SetLabels(labels)
		m, problems := policy.Parse(obj)
		if len(problems) > 0 {
			t.Fatalf("rule %s invalid: %v", id, problems)
		}
		rules[id] = m
		matched := 0
		for _, ns := range namespaces {
			name := ns.GetName()
			if name != m.Namespace && !slices.Contains(protected, name) && m.Rule.Matches(name, k8slabels.Set(ns.GetLabels())) {
				expected[id+"/"+name] = true
				matchedAny[name] = true
				matched++
			}
		}
		if matched == 0 {
			t.Fatalf("rule %s matches no namespace of its manifest: nothing to play out", id)
		}
	}
	var manifest []string
	for _, obj := range objs {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, string(data))
	}
	e.Apply(t, []byte(strings.Join(manifest, "\n")))
	t.Cleanup(func() {
		// t.Context() is done by now.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, m := range rules {
			_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{})
		}
	})

	args := []string{"-l", nsmantest.PlayOutLabel + "=" + run, "--trusted-namespaces", ruleExampleHome}
	fired := map[string]report.Entry{} // by namespace/name/target
	waitedOnPods := map[string]bool{}
	warned := map[string]bool{} // pairs told of an annotation ignored
	idle := slices.ContainsFunc(slices.Collect(maps.Values(rules)), func(m policy.Manager) bool {
		return slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return p.Condition.Type == policy.ConditionIdle })
	})
	deadline := time.Now().Add(3 * time.Minute)
	for len(fired) < len(expected) {
		if time.Now().After(deadline) {
			t.Fatalf("rules acted within 3 minutes on %d of %d namespaces: %v", len(fired), len(expected), slices.Sorted(maps.Keys(fired)))
		}
		before := len(e.Writes(t))
		plan := e.Sweep(t, append(args, "--dry-run")...)
		wantCode(t, plan, 0)
		if w := e.Writes(t)[before:]; len(w) > 0 {
			t.Fatalf("dry run wrote:\n%v", w)
		}
		// What was created in each namespace before the sweep, which an
		// IDLE policy that fires in it must have counted.
		created := map[string]time.Time{}
		if idle {
			for _, ns := range namespaces {
				if matchedAny[ns.GetName()] {
					created[ns.GetName()] = newestCreated(t, ns.GetName())
				}
			}
		}
		before = len(e.Writes(t))
		res := e.Sweep(t, args...)
		wantCode(t, res, 0)
		actedNow := map[string]bool{}  // rules that fired in this sweep
		warnedNow := map[string]bool{} // rules told of an annotation newly ignored
		for _, entry := range res.Report.Entries {
			id := entry.Namespace + "/" + entry.Name
			m, ok := rules[id]
			switch {
			case !ok || !entry.Rule:
				t.Fatalf("the sweep reported %s (rule %v), which is none of the rules played out", id, entry.Rule)
			case entry.Target == "":
				t.Fatalf("rule %s: %s: %s", id, entry.State, entry.Message)
			}
			pair := id + "/" + entry.Target
			if !expected[pair] {
				t.Errorf("rule %s matched namespace %s (%s), which its manifest does not give it", id, entry.Target, entry.State)
				continue
			}
			comparePairPlan(t, plan, res, entry)
			if entry.AnnotationIgnored != "" && !warned[pair] {
				warned[pair], warnedNow[id] = true, true
			}
			switch entry.State {
			case report.StateWaiting:
				if strings.Contains(entry.Message, "not every pod") {
					waitedOnPods[pair] = true
				}
			case report.StateFired:
				if _, again := fired[pair]; again {
					t.Errorf("rule %s fired on %s twice", id, entry.Target)
				}
				fired[pair] = entry
				actedNow[id] = true
				checkPairFired(t, e, m, entry, recv, waitedOnPods[pair])
				checkIdleFired(t, m, entry, res.Report.Summary.Now, created[entry.Target], namespaces)
			case report.StateDone:
				if _, ok := fired[pair]; !ok {
					t.Errorf("rule %s done on %s without having fired", id, entry.Target)
				}
			default:
				t.Fatalf("rule %s on %s: state %s: %s", id, entry.Target, entry.State, entry.Message)
			}
		}
		events := 0
		for _, w := range e.Writes(t)[before:] {
			if w.Resource == "events" && w.Verb == "create" {
				events++
			}
		}
		if events != len(actedNow)+len(warnedNow) {
			t.Errorf("%d Events written in a sweep in which %d rules acted and %d were told of an annotation ignored, want one per rule and per warning",
				events, len(actedNow), len(warnedNow))
		}
		time.Sleep(time.Second)
	}

	for id, m := range rules {
		if e.Deactivated(t, m.Namespace, m.Name) {
			t.Errorf("rule %s was deactivated; a rule keeps standing", id)
		}
		st := managerStatus(t, m.Namespace, m.Name)
		if st.State != status.StateWatching || st.Rule == nil {
			t.Errorf("rule %s status: %s (%s), summary %+v; want watching, with a summary", id, st.State, st.Message, st.Rule)
			continue
		}
		for pair, entry := range fired {
			if strings.HasPrefix(pair, id+"/") && !slices.ContainsFunc(st.Rule.Latest, func(a status.PairAction) bool {
				return a.Namespace == entry.Target && a.Policy == entry.Policy && a.Result == report.ResultSucceeded
			}) {
				t.Errorf("rule %s status lists %+v among its latest actions, want its action on %s", id, st.Rule.Latest, entry.Target)
			}
		}
	}
	for _, ns := range namespaces {
		if matchedAny[ns.GetName()] {
			continue
		}
		if e.NamespaceGoneOrTerminating(t, ns.GetName()) {
			t.Errorf("namespace %s, which no rule matches, was deleted", ns.GetName())
			continue
		}
		got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rules {
			if record, ok := got.Annotations[status.PairAnnotation(m.UID)]; ok {
				t.Errorf("namespace %s, which rule %s/%s does not match, has its record %s", ns.GetName(), m.Namespace, m.Name, record)
			}
		}
	}

	// The namespaces acted on no longer match (deleted) or are done: the
	// summary changes once more, and then nothing does.
	deliveries := len(recv.Deliveries())
	before := len(e.Writes(t))
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	statusWrites := map[string]int{}
	for _, w := range e.Writes(t)[before:] {
		if w.Resource != "namespacemanagers" || w.Subresource != "status" || w.Verb != "patch" {
			t.Errorf("a sweep after every rule acted wrote %v", w)
			continue
		}
		statusWrites[w.Namespace+"/"+w.Name]++
	}
	for id, n := range statusWrites {
		if n > 1 {
			t.Errorf("a sweep after every rule acted wrote rule %s's status %d times, want at most once", id, n)
		}
	}
	before = len(e.Writes(t))
	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	for _, entry := range res.Report.Entries {
		if entry.State != report.StateDone {
			t.Errorf("after acting, rule %s/%s on %s is %s (%s)", entry.Namespace, entry.Name, entry.Target, entry.State, entry.Message)
		}
	}
	if w := e.Writes(t)[before:]; len(w) > 0 {
		t.Errorf("a sweep with nothing to do wrote:\n%v", w)
	}
	if len(recv.Deliveries()) != deliveries {
		t.Error("a sweep with nothing to do sent webhooks")
	}
}

// comparePairPlan checks that what a sweep did with a (rule, namespace)
// pair is what the dry run just before planned (see
// nsmantest.ComparePlanned).
func comparePairPlan(t *testing.T, plan, real nsmantest.Result, got report.Entry) {
	t.Helper()
	var p report.Entry
	for _, entry := range plan.Report.Entries {
		if entry.Rule && entry.Namespace == got.Namespace && entry.Name == got.Name && entry.Target == got.Target {
			p = entry
		}
	}
	nsmantest.ComparePlanned(t, got.Namespace+"/"+got.Name+" on "+got.Target, p, got, plan.Report.Summary.Now, real.Report.Summary.Now)
}

// checkIdleFired checks, when an IDLE policy fired on a namespace, that the
// entry says what its last activity was, that its idle time has passed
// since, that it is no older than what was created in the namespace before
// the sweep (created), and that its annotationIgnored names the touched
// annotation where the namespace's in the manifest does not parse or is
// more than policy.TouchLeeway ahead of the sweep (now), and only there.
func checkIdleFired(t *testing.T, m policy.Manager, entry report.Entry, now, created time.Time, namespaces []*unstructured.Unstructured) {
	t.Helper()
	i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == entry.Policy })
	if i < 0 || m.Policies[i].Condition.Type != policy.ConditionIdle {
		return
	}
	id := m.Namespace + "/" + m.Name + " on " + entry.Target
	idle := m.Policies[i].Condition.Idle
	switch last := entry.LastActivity; {
	case last == nil:
		t.Errorf("%s fired IDLE without saying its last activity", id)
	case last.At.Add(idle).After(now):
		t.Errorf("%s fired IDLE %s at %s, but its last activity, %s, was at %s", id, idle, now, last.What, last.At)
	case last.At.Time.Before(created):
		t.Errorf("%s fired IDLE on last activity %s at %s, but something was created in it at %s", id, last.What, last.At, created)
	}
	for _, ns := range namespaces {
		if ns.GetName() != entry.Target {
			continue
		}
		why := "" // why the touched annotation is to be ignored
		if touched, ok := ns.GetAnnotations()[policy.TouchedAnnotation]; ok {
			at, err := policy.ParseTouched(touched)
			switch {
			case err != nil:
				why = err.Error()
			case at.After(now.Add(policy.TouchLeeway)):
				why = fmt.Sprintf("%q is more than %s ahead of %s", touched, policy.TouchLeeway, now)
			}
		}
		switch named := strings.Contains(entry.AnnotationIgnored, policy.TouchedAnnotation); {
		case why != "" && !named:
			t.Errorf("%s fired IDLE saying annotationIgnored %q, want it to name %s: %s", id, entry.AnnotationIgnored, policy.TouchedAnnotation, why)
		case why == "" && named:
			t.Errorf("%s fired IDLE saying annotationIgnored %q, but the namespace's annotation %s is a time it counts", id, entry.AnnotationIgnored, policy.TouchedAnnotation)
		}
	}
}

// newestCreated is the newest creationTimestamp of the pods, ReplicaSets,
// ControllerRevisions and Jobs in namespace: what an IDLE policy counts as
// activity there besides the namespace itself.
func newestCreated(t *testing.T, namespace string) time.Time {
	t.Helper()
	ctx, opts := t.Context(), metav1.ListOptions{}
	var newest time.Time
	keep := func(m metav1.ObjectMeta) {
		if m.CreationTimestamp.After(newest) {
			newest = m.CreationTimestamp.Time
		}
	}
	pods, err := shared.Admin.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		keep(o.ObjectMeta)
	}
	replicaSets, err := shared.Admin.AppsV1().ReplicaSets(namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range replicaSets.Items {
		keep(o.ObjectMeta)
	}
	revisions, err := shared.Admin.AppsV1().ControllerRevisions(namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range revisions.Items {
		keep(o.ObjectMeta)
	}
	jobs, err := shared.Admin.BatchV1().Jobs(namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range jobs.Items {
		keep(o.ObjectMeta)
	}
	return newest
}

// checkPairFired checks what a rule did to one namespace when its sweep
// reports the pair fired.
func checkPairFired(t *testing.T, e *nsmantest.Env, m policy.Manager, entry report.Entry, recv *nsmantest.Receiver, waitedOnPods bool) {
	t.Helper()
	id := m.Namespace + "/" + m.Name + " on " + entry.Target
	i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == entry.Policy })
	if i < 0 {
		t.Fatalf("%s fired unknown policy %q", id, entry.Policy)
	}
	p := m.Policies[i]
	if p.Condition.Type == policy.ConditionPodsSucceed {
		sel := k8slabels.SelectorFromSet(p.Condition.PodLabels).String()
		pods, err := shared.Admin.CoreV1().Pods(entry.Target).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase != corev1.PodSucceeded && pod.DeletionTimestamp == nil {
				t.Errorf("%s fired while pod %s (%s) is %s", id, pod.Name, sel, pod.Status.Phase)
			}
		}
		if len(pods.Items) > 0 && !waitedOnPods {
			t.Errorf("%s: no sweep saw its pods pending before they succeeded", id)
		}
	}
	switch p.Action.Type {
	case policy.ActionDelete:
		if !e.NamespaceGoneOrTerminating(t, entry.Target) {
			t.Errorf("%s fired DELETE but the namespace remains", id)
		}
	case policy.ActionWebhook:
		ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), entry.Target, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		key := status.PairIdempotencyKey(m, p.Name, ns.UID)
		n := 0
		for _, d := range recv.Deliveries() {
			var body struct {
				Namespace string `json:"namespace"`
			}
			if err := json.Unmarshal(d.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.Namespace == entry.Target {
				n++
				if got := d.Header.Get("Idempotency-Key"); got != key {
					t.Errorf("%s: Idempotency-Key %q, want the pair's %q", id, got, key)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s fired WEBHOOK: the receiver got %d requests about the namespace, want 1", id, n)
		}
	default:
		t.Fatalf("%s fired %s, which playOutRule does not follow yet", id, p.Action.Type)
	}
}
