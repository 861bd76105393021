package execute

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
)

// Restore undoes SCALE_DOWN in namespace: every Deployment and StatefulSet
// that carries ReplicasAnnotation and still has zero replicas gets its
// recorded count back, and the record is removed. A workload scaled by
// someone else since is left alone, and its record removed too: it no longer
// applies, and kept it would bring back an old count at a later restore. It
// returns what it did, or with dryRun what it would do.
func Restore(ctx context.Context, clients cluster.Clients, namespace string, dryRun bool) ([]string, error) {
	w := write.New(clients.Kube, clients.Dynamic, clients.Managers, nil, dryRun)
	return EachWorkload(ctx, clients, namespace, nil, func(resource schema.GroupVersionResource, kind string, obj *unstructured.Unstructured) (string, error) {
		return RestoreOne(ctx, clients, w, resource, kind, obj)
	})
}

// RestoreOne restores workload obj (of kind, as resource) through w, as
// Restore does each: its return is what it did, or would do in a dry run.
func RestoreOne(ctx context.Context, clients cluster.Clients, w write.Writer, resource schema.GroupVersionResource, kind string, obj *unstructured.Unstructured) (string, error) {
	effect, err := ChangeWorkload(ctx, clients, w, resource, obj, func(obj *unstructured.Unstructured) (map[string]any, string, error) {
		recorded, ok := obj.GetAnnotations()[status.ReplicasAnnotation]
		if !ok {
			return nil, "", nil
		}
		id := kind + "/" + obj.GetName()
		replicas, err := strconv.ParseInt(recorded, 10, 32)
		if err != nil || replicas < 0 {
			return nil, "", fmt.Errorf("%s: annotation %s=%q is not a replica count", id, status.ReplicasAnnotation, recorded)
		}
		dropRecord := map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: nil}}
		if current := SpecReplicas(obj); current != 0 {
			return map[string]any{"metadata": dropRecord},
				fmt.Sprintf("leave %s at %d replicas: scaled since nsman scaled it down; drop its record of %d", id, current, replicas), nil
		}
		return map[string]any{
			"metadata": dropRecord,
			"spec":     map[string]any{"replicas": replicas},
		}, fmt.Sprintf("scale %s from 0 to %d", id, replicas), nil
	})
	if err != nil {
		return "", fmt.Errorf("restore %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return effect, nil
}

// Hold writes HoldAnnotation ending at until (zero: removes it) on
// namespace or that manager in it, unless dryRun, and returns the patch.
func Hold(ctx context.Context, clients cluster.Clients, namespace, manager string, until time.Time, dryRun bool) ([]byte, error) {
	var value any // null removes the annotation in a merge patch
	if !until.IsZero() {
		value = until.UTC().Format(time.RFC3339)
	}
	patch := write.Patch{Body: []byte(write.MustJSON(map[string]any{"metadata": map[string]any{"annotations": map[string]any{status.HoldAnnotation: value}}}))}
	w := write.New(clients.Kube, clients.Dynamic, clients.Managers, nil, dryRun)
	if manager == "" {
		return patch.Body, w.PatchNamespace(ctx, namespace, patch)
	}
	return patch.Body, w.PatchManager(ctx, namespace, manager, patch)
}

// Touch writes policy.TouchedAnnotation at at (UTC, to the second) on
// namespace, unless dryRun, and returns the patch: an IDLE condition counts
// it as activity.
func Touch(ctx context.Context, clients cluster.Clients, namespace string, at time.Time, dryRun bool) ([]byte, error) {
	value := at.UTC().Truncate(time.Second).Format(time.RFC3339)
	patch := write.Patch{Body: []byte(write.MustJSON(map[string]any{"metadata": map[string]any{"annotations": map[string]any{policy.TouchedAnnotation: value}}}))}
	return patch.Body, write.New(clients.Kube, clients.Dynamic, clients.Managers, nil, dryRun).PatchNamespace(ctx, namespace, patch)
}
