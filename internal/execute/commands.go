package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
)

// Restore undoes SCALE_DOWN in namespace: every workload of every kind
// nsman puts to sleep (Kinds.All), and every object of a kind a sleep's
// patches may have patched (Kinds.Patchable), that carries a record gets
// the state it recorded back, and the record is removed. A workload changed by someone
// else since is left alone, and its record removed too: it no longer
// applies, and kept it would bring back an old state at a later restore. It
// returns what it did, or with dryRun what it would do, and the kinds found
// by discovery that the caller may not list: skipped, not an error, since
// nsman writes only to the kinds its RBAC grants (one it may not patch is
// not offered at all). API groups whose discovery failed are an error that
// names them, once the workloads of the others are restored.
func Restore(ctx context.Context, clients cluster.Clients, namespace string, dryRun bool) (effects, skipped []string, err error) {
	w := write.New(clients.Kube, clients.Dynamic, clients.Managers, nil, dryRun)
	var kinds probe.Kinds
	all, unavailable, discoveryErr := kinds.All(ctx, clients.Kube)
	if discoveryErr != nil {
		discoveryErr = fmt.Errorf("kinds with a scale subresource: %w", discoveryErr)
	} else if len(unavailable) > 0 {
		discoveryErr = fmt.Errorf("kinds with a scale subresource: discovery failed for %s: their workloads are not restored", strings.Join(unavailable, ", "))
	}
	effects, skipped, err = EachKind(ctx, clients, namespace, append(probe.ToWake(all), kinds.Patchable(ctx, clients.Kube)...), true, func(kind probe.Kind, obj *Workload) (string, error) {
		return Wake(ctx, clients, w, kind, obj)
	})
	return effects, skipped, errors.Join(discoveryErr, err)
}

// Wake wakes workload listed of kind through w, as its record says (see workload.Way):
// its return is what it did, or would do in a dry run.
func Wake(ctx context.Context, clients cluster.Clients, w write.Writer, kind probe.Kind, listed *Workload) (string, error) {
	id := kind.Name + "/" + listed.Object.GetName()
	effect, err := ChangeWorkload(ctx, clients, w, kind, listed, func(obj *Workload) (map[string]any, string, error) {
		patch, effect, err := kind.Way.Wake(id, obj.Object)
		if err != nil {
			return nil, "", err
		}
		patch, effect = fluxBack(patch, effect, obj.Object)
		return patch, effect, nil
	})
	if err != nil {
		return "", fmt.Errorf("restore %s %s/%s: %w", kind.Name, listed.Object.GetNamespace(), listed.Object.GetName(), err)
	}
	return effect, nil
}

// Hold writes HoldAnnotation ending at until (zero: removes it) on
// namespace or that manager in it, unless dryRun, and returns the patch.
func Hold(ctx context.Context, clients cluster.Clients, namespace, manager string, until time.Time, dryRun bool) ([]byte, error) {
	return annotateUntil(ctx, clients, status.HoldAnnotation, namespace, manager, until, dryRun)
}

// WakeUntil writes WakeAnnotation ending at until (zero: removes it) on
// namespace or that manager in it, unless dryRun, and returns the patch.
func WakeUntil(ctx context.Context, clients cluster.Clients, namespace, manager string, until time.Time, dryRun bool) ([]byte, error) {
	return annotateUntil(ctx, clients, status.WakeAnnotation, namespace, manager, until, dryRun)
}

// HoldIfUID and WakeUntilIfUID are Hold and WakeUntil on namespace, sent
// only if the namespace's UID is still uid (the merge patch names it, and
// the API server refuses to change a UID, as invalid): nsman serve's write of a link
// bound to a namespace never lands on one recreated under its name.
func HoldIfUID(ctx context.Context, clients cluster.Clients, namespace, uid string, until time.Time) ([]byte, error) {
	return annotateIfUID(ctx, clients, status.HoldAnnotation, namespace, uid, until)
}

// WakeUntilIfUID: see HoldIfUID.
func WakeUntilIfUID(ctx context.Context, clients cluster.Clients, namespace, uid string, until time.Time) ([]byte, error) {
	return annotateIfUID(ctx, clients, status.WakeAnnotation, namespace, uid, until)
}

func annotateIfUID(ctx context.Context, clients cluster.Clients, key, namespace, uid string, until time.Time) ([]byte, error) {
	if uid == "" || until.IsZero() {
		return nil, errors.New("a write bound to a namespace's UID needs the UID and a time")
	}
	meta := map[string]any{"uid": uid, "annotations": map[string]any{key: until.UTC().Format(time.RFC3339)}}
	patch := write.Patch{Body: []byte(write.MustJSON(map[string]any{"metadata": meta}))}
	return patch.Body, write.New(clients.Kube, clients.Dynamic, clients.Managers, nil, false).PatchNamespace(ctx, namespace, patch)
}

// annotateUntil writes annotation key, until as RFC 3339 UTC (zero: removes
// it), on namespace or that manager in it, unless dryRun, and returns the
// patch: a hold and a wake are written, and bounded by a sweep, alike.
func annotateUntil(ctx context.Context, clients cluster.Clients, key, namespace, manager string, until time.Time, dryRun bool) ([]byte, error) {
	var value any // null removes the annotation in a merge patch
	if !until.IsZero() {
		value = until.UTC().Format(time.RFC3339)
	}
	patch := write.Patch{Body: []byte(write.MustJSON(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}}))}
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
