package workload

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// scaledObject is a KEDA ScaledObject: paused at zero replicas, the pause
// it had before (none, or another count) recorded and brought back.
var scaledObject = Known{
	Name: policy.KindScaledObject, Resource: schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"},
	Way: pause{}, Why: "SCALE_DOWN and restore: KEDA ScaledObjects paused at zero",
}

// pauseField is KEDA's annotation in fieldsV1 keys, made once.
var pauseField = []string{"f:metadata", "f:annotations", "f:" + status.KedaPausedReplicas}

// pause is a ScaledObject's way, through KEDA's annotation
// status.KedaPausedReplicas.
type pause struct{}

// Sleep pauses w at zero whatever to says: the replicas are its target's,
// which KEDA scales, not nsman.
func (pause) Sleep(id string, w *unstructured.Unstructured, _ policy.SleepTo) (map[string]any, string) {
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

func (pause) Wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
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

// Awake: not paused at zero.
func (pause) Awake(_ *Spec, annotations map[string]string) bool {
	return annotations[status.KedaPausedReplicas] != "0"
}

// Above: paused at zero whatever to says.
func (pause) Above(*Spec, policy.SleepTo) bool { return true }

func (pause) Record() string       { return status.PausedReplicasAnnotation }
func (pause) AwakeField() []string { return pauseField }
func (pause) Annotations() []string {
	return []string{status.PausedReplicasAnnotation, status.KedaPausedReplicas}
}
func (pause) Verb() string { return "pause" }

// FreesPods: KEDA scales the ScaledObject's target, a kind of its own;
// pausing it frees nothing counted.
func (pause) FreesPods() bool { return false }

func (pause) FreesLoadBalancer() bool { return false }

func (pause) Doc() Doc {
	return Doc{
		Kinds:  "KEDA ScaledObject",
		Asleep: "`" + status.KedaPausedReplicas + `: "0"` + "`",
		Record: "`" + status.PausedReplicasAnnotation + "`: the pause it had, `\"\"` for none",
		Woken:  "the earlier pause back, or none",
	}
}
