package nsmantest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// PlayOutLabel marks the managers of one PlayOut, which sweeps only them.
const PlayOutLabel = "nsman.test/play-out"

// Shorten rewrites a manager for a test: TTLs, initial delays and idle
// times of at most a few seconds, a period of one second, windows open now,
// and webhook URLs pointing at recv (same path): a URL naming a Service of
// the manager's own namespace (<service>.<namespace>.svc[.cluster.local])
// keeps its host, the Service created (see Receiver.ServiceURL) and the port
// made recv's; any other URL is made recv's loopback address.
func Shorten(t testing.TB, admin kubernetes.Interface, obj *unstructured.Unstructured, recv *Receiver) {
	policies, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policies")
	for _, p := range policies {
		pm := p.(map[string]any)
		params, _, _ := unstructured.NestedMap(pm, "condition", "params")
		if params == nil {
			params = map[string]any{}
		}
		shorten := func(key string, max int64) {
			if v, ok := params[key].(int64); !ok || v > max {
				params[key] = max
			}
		}
		switch typ, _, _ := unstructured.NestedString(pm, "condition", "type"); typ {
		case policy.ConditionTTL:
			shorten("ttlSeconds", 4)
		case policy.ConditionPodsSucceed:
			shorten("initialDelaySeconds", 3)
			params["periodSeconds"] = int64(1)
		case policy.ConditionIdle:
			// Below the TTLs' 4 s, so that an IDLE policy before a TTL
			// backstop fires by itself where nothing happens.
			shorten("idleSeconds", 2)
		case policy.ConditionOwnerGone:
			// Below the TTLs' 4 s too: an owner gone is seen before a
			// TTL backstop fires.
			shorten("graceSeconds", 2)
		}
		_ = unstructured.SetNestedMap(pm, params, "condition", "params")
		if _, ok := pm["windows"]; ok {
			// Its windows, as one open for the play-out: TestWindows plays
			// out a policy waiting for one.
			now := time.Now().UTC()
			pm["windows"] = []any{map[string]any{"from": now.Add(-time.Hour).Format("15:04"), "to": now.Add(2 * time.Hour).Format("15:04")}}
		}
		if raw, ok, _ := unstructured.NestedString(pm, "action", "params", "url"); ok && recv != nil {
			u, err := url.Parse(raw)
			if err == nil {
				base := recv.URL
				host := u.Hostname()
				for _, suffix := range []string{".svc.cluster.local", ".svc"} {
					if svc, ok := strings.CutSuffix(host, "."+obj.GetNamespace()+suffix); ok && !strings.Contains(svc, ".") {
						base = recv.ServiceURL(t, admin, obj.GetNamespace(), svc)
						break
					}
				}
				_ = unstructured.SetNestedField(pm, base+u.Path, "action", "params", "url")
			}
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, policies, "spec", "policies")
}

// PlayOut applies the manifests (managers shortened, labelled for this run),
// sweeps every second until every manager has fired, and checks that each
// did what its policy says, when it says:
//   - DELETE: the target is deleted;
//   - PODS_SUCCEED: not before every pod matching podLabels has succeeded,
//     and whatever other pods run; the sweep waited on pending pods before;
//   - SCALE_DOWN: exactly the selected workloads are at zero replicas with
//     their previous count recorded, the rest untouched; nsman restore puts
//     them back;
//   - WEBHOOK: the receiver got exactly one POST with the original body;
//   - a stage (final: false): it fires once, and the manager stands until
//     a final policy fires.
//
// A Service of the manifests that recv stands in for (see Shorten) is not
// applied.
//
// Before every sweep a dry run writes nothing and plans exactly what the
// sweep then does. After the last, one more sweep changes nothing and
// writes nothing.
//
// A rule (a manager with namespaceSelector or namePatterns) is left out,
// neither applied nor followed, with a line in the test log: it has no
// single target, is never deactivated, and reports one entry per namespace
// it matches, which this play-out does not follow. test/integration's
// TestExamplesPlayOut plays the examples' rules out on their own.
func (e *Env) PlayOut(t *testing.T, recv *Receiver, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	run := fmt.Sprintf("run-%d", time.Now().UnixNano())
	var managers []policy.Manager
	var applied []*unstructured.Unstructured
	workloads := map[string][]*unstructured.Unstructured{} // target -> deployments and statefulsets as applied
	for _, obj := range objs {
		if obj.GetKind() == policy.Kind && IsRule(obj) {
			t.Logf("PlayOut leaves out rule %s/%s: it follows single-target managers only", obj.GetNamespace(), obj.GetName())
			continue
		}
		applied = append(applied, obj)
		switch obj.GetKind() {
		case policy.Kind:
			Shorten(t, e.Cluster.Admin, obj, recv)
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[PlayOutLabel] = run
			obj.SetLabels(labels)
			m, problems := policy.Parse(obj)
			if len(problems) > 0 {
				t.Fatalf("manager %s/%s invalid: %v", obj.GetNamespace(), obj.GetName(), problems)
			}
			managers = append(managers, m)
		case "Deployment", "StatefulSet":
			workloads[obj.GetNamespace()] = append(workloads[obj.GetNamespace()], obj)
		}
	}
	if len(managers) == 0 {
		t.Fatal("no NamespaceManager in the manifests")
	}
	for _, obj := range applied {
		if obj.GetKind() == "Service" && recv.serves(obj.GetNamespace(), obj.GetName()) {
			// The receiver's Service stands in for the manifest's.
			continue
		}
		if err := e.applyOne(ctx, obj); err != nil {
			t.Fatalf("apply %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}

	waitedOnPods := map[string]bool{}
	fired, stages := map[string]bool{}, map[string]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for len(fired) < len(managers) {
		if time.Now().After(deadline) {
			t.Fatalf("managers fired within 3 minutes: %v of %d", fired, len(managers))
		}
		plan := e.dryRun(t, run)
		res := e.Sweep(t, "-l", PlayOutLabel+"="+run)
		if res.Code != 0 {
			t.Fatalf("sweep exit %d:\n%s", res.Code, res.Stderr)
		}
		comparePlan(t, plan, res)
		for _, m := range managers {
			id := m.Namespace + "/" + m.Name
			entry, listed := res.Lookup(m.Namespace, m.Name)
			if !listed {
				// A manager that deleted its own namespace goes with it.
				if !fired[id] || !e.NamespaceGoneOrTerminating(t, m.Namespace) {
					t.Fatalf("manager %s vanished without deleting its namespace", id)
				}
				continue
			}
			switch entry.State {
			case report.StateWaiting:
				if strings.Contains(entry.Message, "not every pod") {
					waitedOnPods[id] = true
				}
			case report.StateFired:
				// A stage (final: false) leaves the manager standing: the
				// play-out goes on until a final policy fires.
				if i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == entry.Policy }); i < 0 || m.Policies[i].Final {
					fired[id] = true
				} else if stages[id+"/"+entry.Policy] {
					t.Fatalf("manager %s: stage %q fired twice", id, entry.Policy)
				}
				stages[id+"/"+entry.Policy] = true
				e.checkFired(ctx, t, m, entry, recv, workloads[m.Target()], waitedOnPods[id])
			case report.StateDeactivated:
				if !fired[id] {
					t.Fatalf("manager %s deactivated without firing", id)
				}
			case report.StateTargetTerminating:
				// A manager that deleted its own namespace goes with it; one
				// that deleted another says so while it terminates.
				if !fired[id] || m.Target() != m.Namespace && entry.Action != policy.ActionDelete {
					t.Fatalf("manager %s: %s: %s", id, entry.State, entry.Message)
				}
			default:
				t.Fatalf("manager %s: state %s: %s", id, entry.State, entry.Message)
			}
		}
		time.Sleep(time.Second)
	}

	before := len(e.Writes(t))
	deliveries := 0
	if recv != nil {
		deliveries = len(recv.Deliveries())
	}
	res := e.Sweep(t, "-l", PlayOutLabel+"="+run)
	for _, m := range managers {
		// Gone with its namespace, or still looking at the one it deleted
		// while it terminates.
		terminating := m.Target() == m.Namespace || slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return p.Final && p.Action.Type == policy.ActionDelete })
		if got, listed := res.Lookup(m.Namespace, m.Name); listed && got.State != report.StateDeactivated &&
			!(terminating && got.State == report.StateTargetTerminating) {
			t.Errorf("after firing, manager %s/%s is %s", m.Namespace, m.Name, got.State)
		}
	}
	if writes := e.Writes(t)[before:]; len(writes) > 0 {
		t.Errorf("a sweep with nothing to do wrote:\n%v", writes)
	}
	if recv != nil && len(recv.Deliveries()) != deliveries {
		t.Errorf("a sweep with nothing to do sent webhooks")
	}
}

// IsRule reports whether a NamespaceManager is a rule: its spec has a
// namespaceSelector or namePatterns, as a sweep judges it.
func IsRule(obj *unstructured.Unstructured) bool {
	spec, _ := obj.Object["spec"].(map[string]any)
	return spec["namespaceSelector"] != nil || spec["namePatterns"] != nil
}

// dryRun runs a dry-run sweep and checks that it wrote nothing.
func (e *Env) dryRun(t *testing.T, run string) Result {
	t.Helper()
	before := len(e.Writes(t))
	plan := e.Sweep(t, "-l", PlayOutLabel+"="+run, "--dry-run")
	if plan.Code != 0 {
		t.Fatalf("dry run exit %d:\n%s", plan.Code, plan.Stderr)
	}
	if writes := e.Writes(t)[before:]; len(writes) > 0 {
		t.Fatalf("dry run wrote:\n%v", writes)
	}
	return plan
}

// comparePlan checks that a real sweep did what the dry run just before it
// planned (see ComparePlanned), for every manager the dry run reported.
func comparePlan(t *testing.T, plan, real Result) {
	t.Helper()
	for _, p := range plan.Report.Entries {
		r, listed := real.Lookup(p.Namespace, p.Name)
		if !listed {
			r = report.Entry{}
		}
		ComparePlanned(t, p.Namespace+"/"+p.Name, p, r, plan.Report.Summary.Now, real.Report.Summary.Now)
	}
}

// ComparePlanned checks that entry r, what a real sweep evaluated at
// realNow did, is what entry p of the dry run before it, evaluated at
// planNow, planned: a planned action done, with the same effects. The
// sweep may do more only where pods succeeded or a due time came in
// between; it may do less only where its clock had not reached the due
// time the dry run's had. A sweep's clock is the API server's Date header,
// whole seconds truncated (see cluster.APIObserver), so the later sweep's
// may read up to a second earlier than the dry run's did.
func ComparePlanned(t testing.TB, id string, p, r report.Entry, planNow, realNow time.Time) {
	t.Helper()
	switch {
	case p.State == report.StatePlanned && r.State != report.StateFired && !clockBehind(r, planNow, realNow):
		t.Errorf("%s: planned %s, but the sweep left it %s (%s)", id, p.Action, r.State, r.Message)
	case p.State == report.StatePlanned && r.State == report.StateFired && (r.Policy != p.Policy || r.Action != p.Action || !slices.Equal(r.Effects, p.Effects)):
		t.Errorf("%s: planned %s %s %q, did %s %s %q", id, p.Policy, p.Action, p.Effects, r.Policy, r.Action, r.Effects)
	case p.State != report.StatePlanned && r.State == report.StateFired && !changedSince(p, realNow):
		t.Errorf("%s: fired %s though the dry run before said %s (%s)", id, r.Action, p.State, p.Message)
	}
}

// clockBehind reports whether r waits only on a due time that the dry
// run's clock (planNow) had reached and the real sweep's (realNow), less
// than a second behind it, had not.
func clockBehind(r report.Entry, planNow, realNow time.Time) bool {
	return r.State == report.StateWaiting && r.Due != nil && r.Due.After(realNow) && !r.Due.After(planNow) && planNow.Sub(realNow) < time.Second
}

// changedSince reports whether a manager the dry run found waiting may
// rightly fire in a sweep evaluated at now: its pods may have succeeded in
// between, or the time it was due may have come.
func changedSince(plan report.Entry, now time.Time) bool {
	if plan.State != report.StateWaiting {
		return false
	}
	return strings.Contains(plan.Message, "not every pod") || (plan.Due != nil && !plan.Due.After(now))
}

func (e *Env) checkFired(ctx context.Context, t *testing.T, m policy.Manager, entry report.Entry, recv *Receiver, workloads []*unstructured.Unstructured, waitedOnPods bool) {
	t.Helper()
	id := m.Namespace + "/" + m.Name
	i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == entry.Policy })
	if i < 0 {
		t.Fatalf("%s fired unknown policy %q", id, entry.Policy)
	}
	p := m.Policies[i]
	target := m.Target()
	if p.Condition.Type == policy.ConditionPodsSucceed {
		sel := labels.SelectorFromSet(p.Condition.PodLabels).String()
		pods, err := e.Cluster.Admin.CoreV1().Pods(target).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase != "Succeeded" && pod.DeletionTimestamp == nil {
				t.Errorf("%s fired while pod %s/%s (%s) is %s", id, target, pod.Name, sel, pod.Status.Phase)
			}
		}
		if len(pods.Items) > 0 && !waitedOnPods {
			t.Errorf("%s: no sweep saw its pods pending before they succeeded", id)
		}
	}
	if p.Final && !e.Deactivated(t, m.Namespace, m.Name) && !e.NamespaceGoneOrTerminating(t, m.Namespace) {
		t.Errorf("%s fired but is not deactivated", id)
	}
	switch p.Action.Type {
	case policy.ActionDelete:
		if !e.NamespaceGoneOrTerminating(t, target) {
			t.Errorf("%s fired DELETE but namespace %s remains", id, target)
		}
	case policy.ActionScaleDown:
		e.checkScaledDown(ctx, t, id, target, p.Action.Selectors, workloads)
	case policy.ActionWebhook:
		// The receiver is shared: this policy's requests are those whose
		// URL path is its own.
		u, _ := url.Parse(p.Action.URL)
		var deliveries []Delivery
		for _, d := range recv.Deliveries() {
			if d.Path == u.Path {
				deliveries = append(deliveries, d)
			}
		}
		if len(deliveries) != 1 {
			t.Fatalf("%s fired WEBHOOK: receiver got %d requests at %s, want 1", id, len(deliveries), u.Path)
		}
		var body struct {
			NamespaceManager struct{ Namespace, Name string } `json:"namespaceManager"`
			Policy           map[string]any                   `json:"policy"`
			Namespace        string                           `json:"namespace"`
		}
		if err := json.Unmarshal(deliveries[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.NamespaceManager.Namespace != m.Namespace || body.NamespaceManager.Name != m.Name || body.Namespace != target || body.Policy["name"] != p.Name {
			t.Errorf("%s webhook body lacks the original fields: %s", id, deliveries[0].Body)
		}
	}
}

func (e *Env) checkScaledDown(ctx context.Context, t *testing.T, id, target string, selectors []policy.Selector, applied []*unstructured.Unstructured) {
	t.Helper()
	if len(selectors) == 0 {
		selectors = []policy.Selector{{Kind: policy.KindDeployment}, {Kind: policy.KindStatefulSet}}
	}
	resources := map[string]schema.GroupVersionResource{
		"Deployment":  {Group: "apps", Version: "v1", Resource: "deployments"},
		"StatefulSet": {Group: "apps", Version: "v1", Resource: "statefulsets"},
	}
	wantReplicas := map[string]int64{}
	for _, w := range applied {
		replicas, found, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
		if !found {
			replicas = 1
		}
		selected := slices.ContainsFunc(selectors, func(s policy.Selector) bool {
			return s.Kind == w.GetKind() && labels.SelectorFromSet(s.Labels).Matches(labels.Set(w.GetLabels()))
		})
		got, err := e.Dynamic.Resource(resources[w.GetKind()]).Namespace(target).Get(ctx, w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
		record, recorded := got.GetAnnotations()[status.ReplicasAnnotation]
		name := w.GetKind() + "/" + w.GetName()
		switch {
		case selected && (now != 0 || record != strconv.FormatInt(replicas, 10)):
			t.Errorf("%s: selected %s has replicas %d and record %q, want 0 and %d", id, name, now, record, replicas)
		case !selected && (now != replicas || recorded):
			t.Errorf("%s: unselected %s changed: replicas %d (was %d), record %q", id, name, now, replicas, record)
		}
		wantReplicas[name] = replicas
	}

	res := e.Restore(t, target)
	if res != 0 {
		t.Fatalf("nsman restore -n %s: exit %d", target, res)
	}
	for _, w := range applied {
		got, err := e.Dynamic.Resource(resources[w.GetKind()]).Namespace(target).Get(ctx, w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name := w.GetKind() + "/" + w.GetName()
		now, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
		if _, recorded := got.GetAnnotations()[status.ReplicasAnnotation]; now != wantReplicas[name] || recorded {
			t.Errorf("after restore %s has replicas %d (record kept: %v), want %d", name, now, recorded, wantReplicas[name])
		}
	}
}
