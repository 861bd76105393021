package robust

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// mix is a set of managers labelled nsman.test/crash=run: due ones of each
// action (DELETE, SCALE_DOWN of a 2-replica Deployment, WEBHOOK to recv, as
// Service "sink" of the manager's own namespace: the managers are tenants')
// and idle ones that are not due. Its rules, in a trusted namespace, call
// recv at its loopback address.
type mix struct {
	run  string
	due  map[string]string // namespace -> action
	idle []string
	// ruled maps each namespace a rule of the mix acts on to the action;
	// rules maps each rule's name to its uid.
	ruled map[string]string
	rules map[string]types.UID
}

// ruleHome is where the mixes' rules live: a namespace trusted by default.
const ruleHome = "namespace-manager"

// ensureRuleHome creates ruleHome unless it exists.
func ensureRuleHome(t *testing.T) {
	t.Helper()
	if _, err := shared.Admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ruleHome}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// seedMix creates n managers, one in each of n namespaces, cycling through
// the three actions and an idle one.
func seedMix(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, run string, n int) mix {
	t.Helper()
	m := mix{run: run, due: map[string]string{}}
	for i := range n {
		ns := shared.Namespace(t)
		action := []string{"DELETE", "SCALE_DOWN", "WEBHOOK", "idle"}[i%4]
		policy, ttl := map[string]any{"type": action}, int64(0)
		switch action {
		case "idle":
			m.idle = append(m.idle, ns)
			policy, ttl = map[string]any{"type": "DELETE"}, 3600
		case "WEBHOOK":
			policy["params"] = map[string]any{"url": recv.ServiceURL(t, shared.Admin, ns, "sink") + "/" + ns}
		case "SCALE_DOWN":
			createDeployment(t, ns, 2)
		}
		if action != "idle" {
			m.due[ns] = action
		}
		createManager(t, e, ns, run, ttl, policy)
	}
	m.seedRules(t, e, recv)
	return m
}

// seedRules adds rules to the mix, each due on namespaces of its own: a
// WEBHOOK rule over two, a DELETE rule over one and a SCALE_DOWN rule over
// one with a 2-replica Deployment.
func (m *mix) seedRules(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver) {
	t.Helper()
	ctx := t.Context()
	ensureRuleHome(t)
	m.ruled, m.rules = map[string]string{}, map[string]types.UID{}
	for _, r := range []struct {
		action string
		n      int
	}{{"WEBHOOK", 2}, {"DELETE", 1}, {"SCALE_DOWN", 1}} {
		name := strings.ToLower("rule-" + r.action + "-" + m.run)
		for range r.n {
			ns := shared.Namespace(t)
			patch := fmt.Sprintf(`{"metadata":{"labels":{"nsman.test/rule":%q}}}`, name)
			if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if r.action == "SCALE_DOWN" {
				createDeployment(t, ns, 2)
			}
			m.ruled[ns] = r.action
		}
		action := map[string]any{"type": r.action}
		if r.action == "WEBHOOK" {
			action["params"] = map[string]any{"url": recv.URL + "/" + name}
		}
		rule := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ruleHome, "name": strings.ReplaceAll(name, "_", "-"), "labels": map[string]any{"nsman.test/crash": m.run}},
			"spec": map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"nsman.test/rule": name}},
				"policies": []any{map[string]any{
					"name":      "act when due",
					"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
					"action":    action,
				}},
			},
		}}
		created, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ruleHome).Create(ctx, rule, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.rules[created.GetName()] = created.GetUID()
		for ns, action := range m.ruled {
			if action == r.action {
				m.ruled[ns] = action + " " + string(created.GetUID())
			}
		}
	}
}

// ruledAction splits a ruled entry into the action and the rule's uid.
func ruledAction(v string) (string, types.UID) {
	action, uid, _ := strings.Cut(v, " ")
	return action, types.UID(uid)
}

// checkConverged checks that every due manager's action is done and the
// manager deactivated, each webhook under one Idempotency-Key, and nothing
// idle touched.
func (m mix) checkConverged(t *testing.T, e *nsmantest.Env, recv *nsmantest.Receiver, res nsmantest.Result) {
	t.Helper()
	keys := map[string]map[string]bool{}
	for _, d := range recv.Deliveries() {
		var body struct{ Namespace string }
		if json.Unmarshal(d.Body, &body) == nil {
			if keys[body.Namespace] == nil {
				keys[body.Namespace] = map[string]bool{}
			}
			keys[body.Namespace][d.Header.Get("Idempotency-Key")] = true
		}
	}
	for ns, action := range m.due {
		// A manager that deleted its own namespace goes with it, not
		// deactivated; every other one is deactivated.
		if action == "DELETE" {
			if !e.NamespaceGoneOrTerminating(t, ns) {
				t.Errorf("namespace %s not deleted", ns)
			}
			continue
		}
		if !e.Deactivated(t, ns, ns) {
			t.Errorf("%s manager %s not converged: %+v", action, ns, res.Entry(t, ns, ns))
		}
		checkActed(t, action, ns, keys[ns])
	}
	for _, ns := range m.idle {
		if e.Deactivated(t, ns, ns) || e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("manager %s was not due but was acted on", ns)
		}
	}
	for ns, v := range m.ruled {
		action, uid := ruledAction(v)
		if action == "DELETE" {
			if !e.NamespaceGoneOrTerminating(t, ns) {
				t.Errorf("rule: namespace %s not deleted", ns)
			}
			continue
		}
		obj, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var st status.PairStatus
		if err := json.Unmarshal([]byte(obj.Annotations[status.PairAnnotation(uid)]), &st); err != nil || st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.Claim != nil {
			t.Errorf("rule %s on %s not converged: record %+v (%v)", action, ns, st, err)
		}
		checkActed(t, "rule "+action, ns, keys[ns])
	}
}

// checkActed checks what a converged SCALE_DOWN or WEBHOOK left in ns: the
// Deployment at zero with its count recorded, or one Idempotency-Key.
func checkActed(t *testing.T, action, ns string, keys map[string]bool) {
	t.Helper()
	switch {
	case strings.HasSuffix(action, "SCALE_DOWN"):
		d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 0 || d.Annotations[status.ReplicasAnnotation] != "2" {
			t.Errorf("%s: deployment in %s: replicas %d, record %q", action, ns, *d.Spec.Replicas, d.Annotations[status.ReplicasAnnotation])
		}
	case strings.HasSuffix(action, "WEBHOOK"):
		if len(keys) != 1 {
			t.Errorf("%s for %s delivered with keys %v, want exactly one key", action, ns, keys)
		}
	}
}
