package compat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

func manager(ns, name, label string, policy map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"nsman.test/case": label}},
		"spec":       map[string]any{"policies": []any{policy}},
	}}
}

func deleteAfter(name string, params map[string]any) map[string]any {
	return map[string]any{
		"name":      name,
		"condition": map[string]any{"type": "TTL", "params": params},
		"action":    map[string]any{"type": "DELETE"},
	}
}

// Under the original CRD, which checks types but no ranges, an invalid
// manager is stored; nsman reports it and goes on with the rest.
func TestInvalidManagerUnderTheOriginalCRD(t *testing.T) {
	e := setup(t)
	bad, good := shared.Namespace(t), shared.Namespace(t)
	create := func(obj *unstructured.Unstructured) {
		t.Helper()
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(manager(bad, bad, bad, map[string]any{
		"name":      "never valid",
		"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"periodSeconds": int64(0), "initialDelaySeconds": int64(-1)}},
		"action":    map[string]any{"type": "WEBHOOK"},
	}))
	create(manager(good, good, bad, deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)})))

	res := e.Sweep(t, "-l", "nsman.test/case="+bad)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	invalid := res.Entry(t, bad, bad)
	want := []string{
		"spec.policies[0].condition.params.initialDelaySeconds",
		"spec.policies[0].condition.params.periodSeconds",
		"spec.policies[0].action.params.url",
	}
	if invalid.State != report.StateInvalid || len(invalid.Problems) != len(want) {
		t.Fatalf("entry %+v, want invalid with %d problems", invalid, len(want))
	}
	for i, path := range want {
		if !strings.HasPrefix(invalid.Problems[i], path+":") {
			t.Errorf("problem %d = %q, want one at %s", i, invalid.Problems[i], path)
		}
	}
	if got := res.Entry(t, good, good); got.State != report.StateFired {
		t.Errorf("valid manager: %s (%s), want fired", got.State, got.Message)
	}
	if e.NamespaceGoneOrTerminating(t, bad) {
		t.Error("invalid manager's namespace deleted")
	}
}

// Under the original CRD the status, claims included, lives in an annotation; one left by a dead
// sweep is completed, one still live is respected. The managers live in the
// trusted namespace-manager, so they outlive the namespaces they delete.
func TestClaimsInAnnotations(t *testing.T) {
	e := setup(t)
	live, expired := shared.Namespace(t), shared.Namespace(t)
	const home = "namespace-manager"
	for _, target := range []string{live, expired} {
		obj := manager(home, target, live, deleteAfter("delete at once", map[string]any{"ttlSeconds": int64(0)}))
		_ = unstructured.SetNestedField(obj.Object, target, "spec", "namespace")
		// Within the sweep's --claim-ttl (1m): a claim further ahead counts as expired.
		until := time.Now().Add(45 * time.Second)
		if target == expired {
			until = time.Now().Add(-time.Minute)
		}
		st, _ := json.Marshal(status.Status{Progress: status.Progress{Claim: &status.Claim{Policy: "delete at once", Action: "DELETE", Sweep: "dead-sweep", Expires: until, Generation: 1}}})
		obj.SetAnnotations(map[string]string{status.StatusAnnotation: string(st)})
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Delete(t.Context(), target, metav1.DeleteOptions{})
		})
	}
	res := e.Sweep(t, "-l", "nsman.test/case="+live)
	if got := res.Entry(t, home, live); got.State != report.StateBusy {
		t.Errorf("live claim: %s (%s), want busy", got.State, got.Message)
	}
	if got := res.Entry(t, home, expired); got.State != report.StateFired {
		t.Errorf("expired claim: %s (%s), want fired", got.State, got.Message)
	}
	if e.NamespaceGoneOrTerminating(t, live) || !e.NamespaceGoneOrTerminating(t, expired) {
		t.Error("wrong namespace deleted")
	}
	if !e.Deactivated(t, home, expired) || e.Deactivated(t, home, live) {
		t.Error("wrong manager deactivated")
	}
	var st status.Status
	if err := json.Unmarshal([]byte(e.Manager(t, home, expired).GetAnnotations()[status.StatusAnnotation]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Claim != nil || st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.State != report.StateFired {
		t.Errorf("status annotation after completion: %+v", st)
	}
}
