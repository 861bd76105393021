package execute

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ScaleToZero sets one workload's replicas to zero, through wr, and records the count it
// had, overwriting any record: a record is always the count the workload had
// when nsman last scaled it to zero, so an older one, left by a scale-down
// undone by hand since, must not survive to be restored. A workload already
// at zero is not written to, and keeps its record.
//
// It returns the workload as scaled from, nil when it was not.
func ScaleToZero(ctx context.Context, clients cluster.Clients, wr write.Writer, resource schema.GroupVersionResource, kind string, w *unstructured.Unstructured) (string, *unstructured.Unstructured, error) {
	var from *unstructured.Unstructured
	effect, err := ChangeWorkload(ctx, clients, wr, resource, w, func(w *unstructured.Unstructured) (map[string]any, string, error) {
		replicas := SpecReplicas(w)
		if replicas == 0 {
			from = nil
			return nil, "", nil
		}
		from = w
		return map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: strconv.FormatInt(replicas, 10)}},
			"spec":     map[string]any{"replicas": 0},
		}, fmt.Sprintf("scale %s/%s from %d to 0", kind, w.GetName(), replicas), nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("scale %s %s/%s: %w", kind, w.GetNamespace(), w.GetName(), err)
	}
	if effect == "" {
		// Already at zero, or deleted meanwhile.
		from = nil
	}
	return effect, from, nil
}
