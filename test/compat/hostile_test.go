package compat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/sweep"
)

// TestHostileManagers stores, under the original CRD (which checks types
// but no sizes), a manager with 1,000 policies and one with a 1 MiB label
// value beside an ordinary due manager: the sweep reports each, keeps what
// it writes small, and still acts on the due one.
func TestHostileManagers(t *testing.T) {
	e := setup(t)
	many, huge, due := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	label := "nsman.test/hostile"
	create := func(obj *unstructured.Unstructured) {
		t.Helper()
		obj.SetLabels(map[string]string{label: many})
		if _, err := e.Dynamic.Resource(sweep.ManagerResource).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
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

	res := e.Sweep(t, "-l", label+"="+many)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if got := res.Entry(t, many, many); got.State != sweep.StateWaiting || len(got.Conditions) != 1000 {
		t.Errorf("manager with 1,000 policies: %s with %d conditions, want waiting on all 1,000", got.State, len(got.Conditions))
	}
	invalid := res.Entry(t, huge, huge)
	if invalid.State != sweep.StateInvalid || len(invalid.Problems) == 0 {
		t.Fatalf("manager with a 1 MiB label: %s %v, want invalid", invalid.State, invalid.Problems)
	}
	for _, p := range invalid.Problems {
		if len(p) > 1024 {
			t.Errorf("a problem of %d bytes", len(p))
		}
	}
	if got := res.Entry(t, due, due); got.State != sweep.StateFired {
		t.Errorf("ordinary manager: %s (%s), want fired", got.State, got.Message)
	}
	if len(res.Stderr) > 64<<10 {
		t.Errorf("%d bytes of logs for three managers", len(res.Stderr))
	}
	for _, ns := range []string{many, huge} {
		raw := e.Manager(t, ns, ns).GetAnnotations()[sweep.StatusAnnotation]
		var st sweep.Status
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
}
