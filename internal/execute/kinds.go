package execute

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
)

// way is how a kind sleeps and wakes. Each writes one merge patch that
// changes the workload and its record (an annotation of the state the
// sleep undid) together, so that no write leaves the one without the
// other.
type way interface {
	// sleep returns the patch that puts w to sleep and the effect; a nil
	// patch when w sleeps already (it is then not written to, and keeps
	// any record).
	sleep(id string, w *unstructured.Unstructured) (map[string]any, string)
	// wake returns the patch that brings back what w's record says, and
	// the effect; a nil patch when w has no record. A workload changed by
	// someone else since the sleep keeps its state and loses the record:
	// kept, it would bring an old state back at a later wake.
	wake(id string, w *unstructured.Unstructured) (map[string]any, string, error)
}

// ways are the ways of probe's kinds.
var ways = map[probe.Way]way{probe.WayReplicas: replicas{}, probe.WaySuspend: suspend{}, probe.WayPause: pause{}}

// replicas is the way of a kind with a scale subresource, replicas at
// spec.replicas: scaled to zero, the count it had recorded.
type replicas struct{}

// sleep records the count w had, overwriting any record: a record is always
// the count the workload had when nsman last scaled it to zero, so an older
// one, left by a sleep undone by hand since, must not survive to be
// restored.
func (replicas) sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	n := SpecReplicas(w)
	if n == 0 {
		return nil, ""
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: strconv.FormatInt(n, 10)}},
		"spec":     map[string]any{"replicas": 0},
	}, fmt.Sprintf("scale %s from %d to 0", id, n)
}

func (replicas) wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.ReplicasAnnotation]
	if !ok {
		return nil, "", nil
	}
	n, err := strconv.ParseInt(recorded, 10, 32)
	if err != nil || n < 0 {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is not a replica count", id, status.ReplicasAnnotation, recorded)
	}
	drop := dropRecord(status.ReplicasAnnotation)
	if current := SpecReplicas(w); current != 0 {
		return map[string]any{"metadata": drop},
			fmt.Sprintf("leave %s at %d replicas: scaled since nsman scaled it down; drop its record of %d", id, current, n), nil
	}
	return map[string]any{"metadata": drop, "spec": map[string]any{"replicas": n}}, fmt.Sprintf("scale %s from 0 to %d", id, n), nil
}

// suspend is a CronJob's way: suspended, and resumed only if nsman
// suspended it. One suspended before is not written to, and stays so.
type suspend struct{}

func (suspend) sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	if suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspend"); suspended {
		return nil, ""
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.SuspendAnnotation: "false"}},
		"spec":     map[string]any{"suspend": true},
	}, "suspend " + id
}

func (suspend) wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.SuspendAnnotation]
	if !ok {
		return nil, "", nil
	}
	if recorded != "false" {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is not \"false\"", id, status.SuspendAnnotation, recorded)
	}
	drop := dropRecord(status.SuspendAnnotation)
	if suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspend"); !suspended {
		return map[string]any{"metadata": drop}, fmt.Sprintf("leave %s running: resumed since nsman suspended it; drop its record", id), nil
	}
	return map[string]any{"metadata": drop, "spec": map[string]any{"suspend": false}}, "resume " + id, nil
}

// pause is a KEDA ScaledObject's way: paused at zero replicas, the pause it
// had before (none, or another count) recorded and brought back.
type pause struct{}

func (pause) sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	prior, had := w.GetAnnotations()[status.KedaPausedReplicas]
	if had && prior == "0" {
		return nil, ""
	}
	effect := "pause " + id + " at 0 replicas"
	if had {
		effect += " (paused at " + prior + " before)"
	}
	return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		status.KedaPausedReplicas: "0", status.PausedReplicasAnnotation: prior,
	}}}, effect
}

func (pause) wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.PausedReplicasAnnotation]
	if !ok {
		return nil, "", nil
	}
	if n, err := strconv.ParseInt(recorded, 10, 32); recorded != "" && (err != nil || n < 0) {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is neither empty nor a replica count", id, status.PausedReplicasAnnotation, recorded)
	}
	annotations := map[string]any{status.PausedReplicasAnnotation: nil}
	if current, paused := w.GetAnnotations()[status.KedaPausedReplicas]; !paused || current != "0" {
		return map[string]any{"metadata": map[string]any{"annotations": annotations}},
			fmt.Sprintf("leave %s: its pause changed since nsman paused it; drop its record", id), nil
	}
	if recorded == "" {
		annotations[status.KedaPausedReplicas] = nil
		return map[string]any{"metadata": map[string]any{"annotations": annotations}}, "unpause " + id, nil
	}
	annotations[status.KedaPausedReplicas] = recorded
	return map[string]any{"metadata": map[string]any{"annotations": annotations}}, fmt.Sprintf("pause %s at %s replicas again, as before", id, recorded), nil
}

// dropRecord is the metadata of a patch that removes annotation key.
func dropRecord(key string) map[string]any {
	return map[string]any{"annotations": map[string]any{key: nil}}
}
