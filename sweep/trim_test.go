package sweep

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// trim drops what no decision reads and keeps what one does: the status
// annotation of the original CRD, other annotations, spec and status.
func TestTrimKeepsWhatTheSweepReads(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"name":          "m",
			"managedFields": []any{map[string]any{"manager": "kubectl", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}},
			"annotations": map[string]any{
				lastApplied:      `{"spec":{}}`,
				StatusAnnotation: `{"state":"waiting"}`,
				"team":           "e2e",
			},
		},
		"spec":   map[string]any{"policies": []any{}},
		"status": map[string]any{"state": "waiting"},
	}}
	trim(obj)
	if obj.GetManagedFields() != nil {
		t.Error("managedFields kept")
	}
	want := map[string]string{StatusAnnotation: `{"state":"waiting"}`, "team": "e2e"}
	if got := obj.GetAnnotations(); len(got) != len(want) || got[StatusAnnotation] != want[StatusAnnotation] || got["team"] != "e2e" {
		t.Errorf("annotations %v, want %v", got, want)
	}
	if _, ok := obj.Object["spec"]; !ok {
		t.Error("spec dropped")
	}
	if _, ok := obj.Object["status"]; !ok {
		t.Error("status dropped")
	}
}
