package integration

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/test/nsmantest"
)

// caseLabel marks the managers of one test; its sweeps select them with -l,
// so that they never see another test's managers.
const caseLabel = "nsman.test/case"

// managerObj builds a NamespaceManager in namespace ns with the given
// policies, labelled for the test case.
func managerObj(ns, name, caseID string, policies []any, muts ...func(spec map[string]any)) *unstructured.Unstructured {
	spec := map[string]any{"policies": policies}
	for _, m := range muts {
		m(spec)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{caseLabel: caseID}},
		"spec":       spec,
	}}
}

func targeting(ns string) func(map[string]any) {
	return func(spec map[string]any) { spec["namespace"] = ns }
}

func deactivated(spec map[string]any) { spec["deactivated"] = true }

func ttlPolicy(name string, seconds int64, action map[string]any) map[string]any {
	return map[string]any{
		"name":      name,
		"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": seconds}},
		"action":    action,
	}
}

func podsPolicy(name string, podLabels map[string]any, action map[string]any, params ...func(map[string]any)) map[string]any {
	p := map[string]any{"podLabels": podLabels, "initialDelaySeconds": int64(0), "periodSeconds": int64(1)}
	for _, f := range params {
		f(p)
	}
	return map[string]any{
		"name":      name,
		"condition": map[string]any{"type": "PODS_SUCCEED", "params": p},
		"action":    action,
	}
}

var deleteAction = map[string]any{"type": "DELETE"}

func webhookAction(url string) map[string]any {
	return map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": url}}
}

func createManager(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create manager %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
}

// podWithPhase creates a pod whose phase stays what the test sets.
func podWithPhase(t *testing.T, ns, name string, labels map[string]string, phase corev1.PodPhase) {
	t.Helper()
	nsmantest.PodWithPhase(t, shared.Admin, ns, name, labels, phase)
}

// letBackoffPass moves the next attempt of manager ns/name's failed
// WEBHOOK into the past, as if its backoff had run out: a test need not
// wait the minute.
func letBackoffPass(t *testing.T, ns, name string) {
	t.Helper()
	last := managerStatus(t, ns, name).LastAction
	if last == nil || last.NextAttempt == nil {
		t.Fatalf("manager %s/%s: lastAction %+v backs off from nothing", ns, name, last)
	}
	last.NextAttempt = ptr.To(time.Now().Add(-time.Second).UTC())
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"lastAction": last}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

// letPairBackoffPass does what letBackoffPass does for the record of the
// rule ruleUID on namespace.
func letPairBackoffPass(t *testing.T, namespace string, ruleUID types.UID) {
	t.Helper()
	st, _ := pairRecord(t, namespace, ruleUID)
	if st.LastAction == nil || st.LastAction.NextAttempt == nil {
		t.Fatalf("record on %s: lastAction %+v backs off from nothing", namespace, st.LastAction)
	}
	st.LastAction.NextAttempt = ptr.To(time.Now().Add(-time.Second).UTC())
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{status.PairAnnotation(ruleUID): string(raw)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
