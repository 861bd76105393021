package compat

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestHostileManagers stores, under the original CRD (which checks types
// but no sizes), a manager with 1,000 policies and one with a 1 MiB label
// value beside an ordinary due manager: the sweep reports each, keeps what
// it writes small, and still acts on the due one.
func TestHostileManagers(t *testing.T) {
	began := time.Now()
	e := setup(t)
	many, huge, due := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	label := "nsman.test/hostile"
	create := func(obj *unstructured.Unstructured) {
		t.Helper()
		obj.SetLabels(map[string]string{label: many})
		if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var policies []any
	for i := range 1000 {
		policies = append(policies, deleteAfter(fmt.Sprintf("policy %04d", i), map[string]any{"ttlSeconds": int64(3600 + i)}))
	}
	obj := manager(many, many, many, policies[0].(map[string]any))
	_ = unstructured.SetNestedSlice(obj.Object, policies, "spec", "policies")
	create(obj)
	create(manager(huge, huge, huge, map[string]any{
		"name":      "pods with a huge label",
		"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"podLabels": map[string]any{"role": strings.Repeat("x", 1<<20)}}},
		"action":    map[string]any{"type": "DELETE"},
	}))
	create(manager(due, due, due, deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)})))

	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, "-l", label+"="+many)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	// The hostile managers the sweep met, as its report has them.
	faults := 0
	if got := res.Entry(t, many, many); got.State != report.StateWaiting || len(got.Conditions) != 1000 {
		t.Errorf("manager with 1,000 policies: %s with %d conditions, want waiting on all 1,000", got.State, len(got.Conditions))
	} else {
		faults++
	}
	invalid := res.Entry(t, huge, huge)
	if invalid.State != report.StateInvalid || len(invalid.Problems) == 0 {
		t.Fatalf("manager with a 1 MiB label: %s %v, want invalid", invalid.State, invalid.Problems)
	}
	faults++
	for _, p := range invalid.Problems {
		if len(p) > 1024 {
			t.Errorf("a problem of %d bytes", len(p))
		}
	}
	if got := res.Entry(t, due, due); got.State != report.StateFired {
		t.Errorf("ordinary manager: %s (%s), want fired", got.State, got.Message)
	}
	if len(res.Stderr) > 64<<10 {
		t.Errorf("%d bytes of logs for three managers", len(res.Stderr))
	}
	for _, ns := range []string{many, huge} {
		raw := e.Manager(t, ns, ns).GetAnnotations()[status.StatusAnnotation]
		var st status.Status
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatalf("status of %s: %v", ns, err)
		}
		if len(raw) > 4096 {
			t.Errorf("status annotation of %s is %d bytes", ns, len(raw))
		}
	}
	events, err := shared.Admin.EventsV1().Events(huge).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Reason != "Invalid" || len(events.Items[0].Note) > 1024 {
		t.Errorf("events on the invalid manager: %d, want one bounded Invalid event", len(events.Items))
	}
	deleted := namespaceDeletes(after[len(before):])
	if len(deleted) != 1 || deleted[due] == 0 {
		t.Errorf("namespaces deleted: %v, want only %s", deleted, due)
	}
	actions, dups := actionsAndDuplicates(deleted)
	nsmantest.Figures{Runs: 1, Faults: faults, Actions: actions, Duplicates: dups, Began: began}.Log(t)
}

// hostileCase is one manager of TestHostileManagersInOneSweep: what it
// tries, and what nsman must make of it.
type hostileCase struct {
	what            string
	namespace, name string
	obj             *unstructured.Unstructured
	want            report.State
	// mention is a field path or phrase the message or a problem must hold.
	mention string
}

// protectedTargets are the namespaces nsman protects by default when it
// runs in the trusted namespace-manager, as deploy/ runs it.
var protectedTargets = []string{"kube-system", "kube-public", "kube-node-lease", "default", nsmantest.ServiceAccountNamespace}

// TestHostileManagersInOneSweep stores, under the original CRD, about 40
// managers (400 under NSMAN_LONG=1) that try what they must not, beside
// ordinary due ones, and sweeps them all at once: untrusted namespaces that
// target another namespace by spec.namespace or by name, targets that are
// protected, non-ASCII namespaces, label names and values, workload kinds
// and webhook hosts, and label values of the wrong type. Every one of them is
// due: whatever nsman wrongly let through would act. The sweep exits 0; each
// hostile manager is reported invalid or forbidden, with a message naming
// the field or the guard, a status and an Event; only the ordinary managers'
// namespaces are deleted. What the original CRD itself refuses is checked
// to be refused at admission.
func TestHostileManagersInOneSweep(t *testing.T) {
	began := time.Now()
	e := setup(t)
	ctx := t.Context()
	// As deploy/base/cronjob.yaml runs it: in namespace-manager, which is
	// then protected as well as trusted.
	t.Setenv("POD_NAMESPACE", nsmantest.ServiceAccountNamespace)
	victim := shared.Namespace(t)
	const label = "nsman.test/hostile-mix"
	managers := e.Dynamic.Resource(nsmancluster.ManagerResource)

	// What the original CRD refuses at admission never reaches nsman.
	rejected := 0
	for what, mutate := range map[string]func(*unstructured.Unstructured){
		"a non-ASCII manager name": func(o *unstructured.Unstructured) { o.SetName("müll") },
		"a non-ASCII policy name":  func(o *unstructured.Unstructured) { setPolicy(o, "löschen sofort", "name") },
		"a non-ASCII condition":    func(o *unstructured.Unstructured) { setPolicy(o, "TTĹ", "condition", "type") },
		"a non-ASCII action":       func(o *unstructured.Unstructured) { setPolicy(o, "DELETÉ", "action", "type") },
		"ttlSeconds as a string":   func(o *unstructured.Unstructured) { setPolicy(o, "0", "condition", "params", "ttlSeconds") },
		"a webhook url with spaces": func(o *unstructured.Unstructured) {
			setPolicy(o, "http://exämple .com/hook", "action", "params", "url")
		},
		"pod labels as a list": func(o *unstructured.Unstructured) {
			setPolicy(o, []any{"app", "web"}, "condition", "params", "podLabels")
		},
	} {
		obj := manager(victim, victim, victim, deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)}))
		obj.SetLabels(map[string]string{label: victim})
		mutate(obj)
		_, err := managers.Namespace(victim).Create(ctx, obj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: created with error %v, want it refused as invalid", what, err)
			if err == nil {
				_ = managers.Namespace(victim).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
			}
			continue
		}
		rejected++
	}

	podsSucceed := func(podLabels any) map[string]any {
		return map[string]any{
			"name":      "delete when pods succeed",
			"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"initialDelaySeconds": int64(0), "podLabels": podLabels}},
			"action":    map[string]any{"type": "DELETE"},
		}
	}
	scaleDown := func(selectors ...any) map[string]any {
		return map[string]any{
			"name":      "scale down at once",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
			"action":    map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"selectors": selectors}},
		}
	}
	webhook := func(url string, ttl int64) map[string]any {
		return map[string]any{
			"name":      "notify",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": ttl}},
			"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": url}},
		}
	}
	deleteNow := deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)})

	// kinds build the i-th case in namespace home.
	type kind func(c *hostileCase, home string, i int)
	untrusted := func(what, name, target string, policy map[string]any, want report.State, mention string) kind {
		return func(c *hostileCase, home string, _ int) {
			c.what, c.namespace, c.name, c.want, c.mention = what, home, cmp.Or(name, home), want, mention
			if c.mention == "" {
				c.mention = "may only target " + home
			}
			c.obj = manager(home, c.name, victim, policy)
			if target != "" {
				_ = unstructured.SetNestedField(c.obj.Object, target, "spec", "namespace")
			}
		}
	}
	kinds := []kind{
		untrusted("targets another namespace by spec.namespace", "", victim, deleteNow, report.StateForbidden, ""),
		untrusted("targets another namespace by its name", victim, "", deleteNow, report.StateForbidden, ""),
		untrusted("is named after a protected namespace", "kube-system", "", deleteNow, report.StateForbidden, "namespace kube-system is protected"),
		untrusted("targets a protected namespace by spec.namespace", "", "default", deleteNow, report.StateForbidden, "namespace default is protected"),
		untrusted("targets a non-ASCII namespace", "", "müll-ns", deleteNow, report.StateInvalid, "spec.namespace"),
		untrusted("has a non-ASCII label name", "", "", podsSucceed(map[string]any{"grüße": "x"}), report.StateInvalid, "podLabels[grüße]"),
		untrusted("has a non-ASCII label value", "", "", podsSucceed(map[string]any{"app": "tschüß"}), report.StateInvalid, "podLabels[app]"),
		untrusted("scales a non-ASCII kind", "", "", scaleDown(map[string]any{"kind": "Deplöyment"}), report.StateInvalid, "selectors[0].kind"),
		untrusted("scales by a non-ASCII label", "", "", scaleDown(map[string]any{"kind": "Deployment", "labels": map[string]any{"äpp": "wéb"}}), report.StateInvalid, "selectors[0].labels[äpp]"),
		untrusted("posts to a non-ASCII host with credentials", "", "", webhook("http://nutzer:geheim@bücher.example/hook", 0), report.StateInvalid, "action.params.url"),
		// The original CRD prunes the fields of an object under
		// podLabels and selectors[].labels (the API server warns of them):
		// an object arrives empty.
		untrusted("has an object as a pod label value", "", "", podsSucceed(map[string]any{"app": map[string]any{"name": "web"}}), report.StateInvalid, "podLabels[app]"),
		untrusted("has a list as a pod label value", "", "", podsSucceed(map[string]any{"app": []any{"web", int64(1)}}), report.StateInvalid, "podLabels[app]"),
		untrusted("has null as a pod label value", "", "", podsSucceed(map[string]any{"app": nil}), report.StateInvalid, "podLabels[app]"),
		untrusted("has an object as a workload label value", "", "", scaleDown(map[string]any{"kind": "Deployment", "labels": map[string]any{"app": map[string]any{}}}), report.StateInvalid, "selectors[0].labels[app]"),
		untrusted("has a list as a workload label value", "", "", scaleDown(map[string]any{"kind": "StatefulSet", "labels": map[string]any{"app": []any{}}}), report.StateInvalid, "selectors[0].labels[app]"),
		untrusted("has null as a workload label value", "", "", scaleDown(map[string]any{"kind": "Deployment", "labels": map[string]any{"app": nil}}), report.StateInvalid, "selectors[0].labels[app]"),
		untrusted("has a label value out of range as a number", "", "", podsSucceed(map[string]any{"app": -1.5e300}), report.StateInvalid, "podLabels[app]"),
		// Numbers and booleans are the label text, as in the original
		// operator; a non-ASCII host is an internationalised domain name.
		// Both are valid, and wait.
		untrusted("has numbers and booleans as pod label values", "", "", map[string]any{
			"name":      "delete when pods succeed",
			"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"initialDelaySeconds": int64(3600), "podLabels": map[string]any{"replicas": int64(3), "canary": true, "ratio": 0.5}}},
			"action":    map[string]any{"type": "DELETE"},
		}, report.StateWaiting, "after the initial delay"),
		untrusted("posts to a non-ASCII host later", "", "", webhook("http://bücher.example/hook", 3600), report.StateWaiting, "TTL 1h elapses"),
		untrusted("is an ordinary due manager", "", "", deleteNow, report.StateFired, "TTL 0s elapsed"),
		untrusted("is another ordinary due manager", "", "", deleteNow, report.StateFired, "TTL 0s elapsed"),
	}
	for _, target := range protectedTargets {
		kinds = append(kinds, func(c *hostileCase, _ string, i int) {
			c.what = "in the trusted namespace, targets protected " + target
			c.namespace, c.name = nsmantest.ServiceAccountNamespace, fmt.Sprintf("%s-%d", victim, i)
			c.want, c.mention = report.StateForbidden, "namespace "+target+" is protected"
			c.obj = manager(c.namespace, c.name, victim, deleteNow)
			_ = unstructured.SetNestedField(c.obj.Object, target, "spec", "namespace")
		})
	}

	n := nsmantest.Scale(40, 400)
	cases := make([]hostileCase, n)
	for i := range cases {
		c := &cases[i]
		home := ""
		if i%len(kinds) < len(kinds)-len(protectedTargets) {
			home = shared.Namespace(t)
		}
		kinds[i%len(kinds)](c, home, i)
		c.obj.SetLabels(map[string]string{label: victim})
		if _, err := managers.Namespace(c.namespace).Create(ctx, c.obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("manager that %s: %v", c.what, err)
		}
		if c.namespace == nsmantest.ServiceAccountNamespace {
			t.Cleanup(func() {
				_ = managers.Namespace(c.namespace).Delete(context.Background(), c.name, metav1.DeleteOptions{})
			})
		}
	}

	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, "-l", label+"="+victim)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if strings.Contains(res.Stderr, "panic") || strings.Contains(res.Stderr, "goroutine ") {
		t.Errorf("the sweep panicked:\n%s", res.Stderr)
	}
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Entries) != n {
		t.Errorf("%d managers in the report, want %d", len(res.Report.Entries), n)
	}

	type ref struct{ namespace, name string }
	reasons := map[ref][]string{}
	events, err := shared.Admin.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Regarding.Kind == "NamespaceManager" {
			r := ref{ev.Regarding.Namespace, ev.Regarding.Name}
			reasons[r] = append(reasons[r], ev.Reason)
		}
	}

	fired, hostile := map[string]bool{}, 0
	for _, c := range cases {
		got := res.Entry(t, c.namespace, c.name)
		mentioned := strings.Contains(got.Message, c.mention)
		for _, p := range got.Problems {
			mentioned = mentioned || strings.Contains(p, c.mention)
		}
		if got.State != c.want || !mentioned {
			t.Errorf("manager that %s (%s/%s): %s (%s; %v), want %s mentioning %q", c.what, c.namespace, c.name, got.State, got.Message, got.Problems, c.want, c.mention)
			continue
		}
		switch c.want {
		case report.StateFired:
			fired[c.namespace] = true
			if !e.NamespaceGoneOrTerminating(t, c.namespace) {
				t.Errorf("ordinary manager %s fired but its namespace stays", c.namespace)
			}
			continue
		case report.StateInvalid, report.StateForbidden:
			hostile++
			if c.want == report.StateInvalid && len(got.Problems) == 0 {
				t.Errorf("manager that %s: invalid without problems", c.what)
			}
			reason := map[report.State]string{report.StateInvalid: "Invalid", report.StateForbidden: "Forbidden"}[c.want]
			if rs := reasons[ref{c.namespace, c.name}]; len(rs) != 1 || rs[0] != reason {
				t.Errorf("manager that %s: events %v, want one %s", c.what, rs, reason)
			}
		}
		var st status.Status
		if err := json.Unmarshal([]byte(e.Manager(t, c.namespace, c.name).GetAnnotations()[status.StatusAnnotation]), &st); err != nil {
			t.Errorf("manager that %s: status annotation: %v", c.what, err)
		} else if st.State != c.want || st.Message == "" {
			t.Errorf("manager that %s: status %s %q, want %s with a message", c.what, st.State, st.Message, c.want)
		}
		if e.NamespaceGoneOrTerminating(t, c.namespace) {
			t.Errorf("manager that %s: namespace %s deleted", c.what, c.namespace)
		}
		if e.Deactivated(t, c.namespace, c.name) {
			t.Errorf("manager that %s deactivated", c.what)
		}
	}
	for _, ns := range append([]string{victim}, protectedTargets...) {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted", ns)
		}
	}
	// Only the ordinary managers' namespaces were deleted, each once, and
	// nothing else was changed but managers and Events.
	deleted := namespaceDeletes(after[len(before):])
	for ns := range deleted {
		if !fired[ns] {
			t.Errorf("namespace %s deleted, not an ordinary manager's", ns)
		}
	}
	if len(deleted) != len(fired) {
		t.Errorf("%d namespaces deleted, want the %d of the ordinary managers", len(deleted), len(fired))
	}
	for _, r := range after[len(before):] {
		switch {
		case r.Verb == "get" || r.Verb == "list" || r.Resource == "namespacemanagers" || r.Resource == "events":
		case r.Verb == "delete" && r.Resource == "namespaces" && fired[r.Name]:
		default:
			t.Errorf("unexpected request %s", r)
		}
	}
	actions, dups := actionsAndDuplicates(deleted)
	nsmantest.Figures{Runs: 1, Faults: hostile + rejected, Actions: actions, Duplicates: dups, Began: began}.Log(t)
}

// setPolicy sets a field of the first policy of a manager.
func setPolicy(obj *unstructured.Unstructured, value any, fields ...string) {
	policies, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policies")
	_ = unstructured.SetNestedField(policies[0].(map[string]any), value, fields...)
	_ = unstructured.SetNestedSlice(obj.Object, policies, "spec", "policies")
}

// TestTrustedNamespaceDefaults checks, in dry runs only, the default
// trusted and protected namespaces from outside a pod and inside one.
func TestTrustedNamespaceDefaults(t *testing.T) {
	e := setup(t)
	const home = nsmantest.ServiceAccountNamespace
	managers := e.Dynamic.Resource(nsmancluster.ManagerResource)

	// A manager in the trusted namespace-manager that targets
	// namespace-manager itself would delete every trusted manager with it.
	// In a pod nsman protects the namespace it runs in; run from a laptop or
	// a CI job it must protect the trusted namespace all the same.
	t.Run("the trusted namespace is protected outside a pod", func(t *testing.T) {
		t.Setenv("POD_NAMESPACE", "")
		id := shared.Namespace(t)
		obj := manager(home, id, id, deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)}))
		_ = unstructured.SetNestedField(obj.Object, home, "spec", "namespace")
		if _, err := managers.Namespace(home).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = managers.Namespace(home).Delete(context.Background(), id, metav1.DeleteOptions{})
		})
		res := e.Sweep(t, "--dry-run", "-l", "nsman.test/case="+id)
		if got := res.Entry(t, home, id); got.State != report.StateForbidden || !strings.Contains(got.Message, "protected") {
			t.Errorf("manager in %s targeting %s, swept from outside a pod: %s (%s), want forbidden as protected", home, home, got.State, got.Message)
		}
	})

	// In a pod in namespace-manager, the namespace it runs in is also a
	// default trusted namespace: a refusal names it once.
	t.Run("a refusal names each trusted namespace once", func(t *testing.T) {
		t.Setenv("POD_NAMESPACE", home)
		tenant, other := shared.Namespace(t), shared.Namespace(t)
		obj := manager(tenant, tenant, tenant, deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)}))
		_ = unstructured.SetNestedField(obj.Object, other, "spec", "namespace")
		if _, err := managers.Namespace(tenant).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		res := e.Sweep(t, "--dry-run", "-l", "nsman.test/case="+tenant)
		got := res.Entry(t, tenant, tenant)
		if got.State != report.StateForbidden || strings.Count(got.Message, home) != 1 {
			t.Errorf("refusal %s (%s), want forbidden naming %s once", got.State, got.Message, home)
		}
	})
}

// namespaceDeletes counts the namespace deletes that succeeded among reqs,
// nsman's audited requests, by namespace.
func namespaceDeletes(reqs []cluster.Request) map[string]int {
	deletes := map[string]int{}
	for _, r := range reqs {
		if r.Verb == "delete" && r.Resource == "namespaces" && r.Code == 200 {
			deletes[r.Name]++
		}
	}
	return deletes
}

// actionsAndDuplicates sums a count by target: all actions, and those
// beyond the first on each target.
func actionsAndDuplicates(byTarget map[string]int) (actions, duplicates int) {
	for _, n := range byTarget {
		actions += n
		duplicates += max(n-1, 0)
	}
	return actions, duplicates
}
