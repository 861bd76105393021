package integration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/sweep"
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
	_, err := env.Dynamic.Resource(sweep.ManagerResource).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create manager %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
}

// podWithPhase creates a pod whose phase stays what the test sets.
func podWithPhase(t *testing.T, ns, name string, labels map[string]string, phase corev1.PodPhase) {
	t.Helper()
	nsmantest.PodWithPhase(t, shared.Admin, ns, name, labels, phase)
}
