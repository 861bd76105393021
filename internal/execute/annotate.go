package execute

import (
	"context"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
)

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
