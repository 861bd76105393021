package workload

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// The kinds that sleep by their replicas: Deployments and StatefulSets,
// known without discovery, and any other kind with a scale subresource
// that discovery finds (Scale), Argo Rollouts among them, which the
// shipped ClusterRole grants.
var (
	deployment = Known{
		Name: policy.KindDeployment, Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Way: Replicas, Default: true, Why: "SCALE_DOWN and restore",
	}
	statefulSet = Known{
		Name: policy.KindStatefulSet, Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		Way: Replicas, Default: true, Why: "SCALE_DOWN and restore",
	}
	argoRollouts = Grant{Group: "argoproj.io", Resource: "rollouts", Why: "SCALE_DOWN and restore: Argo Rollouts scaled to zero"}
)

// Replicas is the way of a kind with a scale subresource, replicas at
// spec.replicas: scaled to zero, or to params.replicas, the count it had
// recorded.
var Replicas Way = replicas{}

type replicas struct{}

// Sleep scales w to to.Replicas and records the count it had, overwriting
// any record: a record is always the count the workload had when nsman
// last scaled it down, so an older one, left by a sleep undone by hand
// since, must not survive to be restored. A workload at or below
// to.Replicas, or at or below what its record says nsman left it at, is
// asleep already: not scaled up, and not recorded. Above zero, to.Replicas
// is recorded too (status.ReplicasAsleepAnnotation), so that a wake, and
// nsman restore, which know no policy, tell a workload still asleep from
// one woken since.
func (replicas) Sleep(id string, w *unstructured.Unstructured, to policy.SleepTo) (map[string]any, string) {
	n := SpecReplicas(w)
	if n <= max(to.Replicas, leftAt(w.GetAnnotations())) {
		return nil, ""
	}
	records := map[string]any{status.ReplicasAnnotation: strconv.FormatInt(n, 10)}
	if _, had := w.GetAnnotations()[status.ReplicasAsleepAnnotation]; to.Replicas > 0 {
		records[status.ReplicasAsleepAnnotation] = strconv.FormatInt(to.Replicas, 10)
	} else if had {
		records[status.ReplicasAsleepAnnotation] = nil
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": records},
		"spec":     map[string]any{"replicas": to.Replicas},
	}, fmt.Sprintf("scale %s from %d to %d", id, n, to.Replicas)
}

// Wake brings back the recorded count of a workload at or below the
// replicas its sleep left it at (0, or status.ReplicasAsleepAnnotation's);
// one above them was scaled since, and is left as it is.
func (replicas) Wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.ReplicasAnnotation]
	if !ok {
		return nil, "", nil
	}
	n, err := strconv.ParseInt(recorded, 10, 32)
	if err != nil || n < 0 {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is not a replica count", id, status.ReplicasAnnotation, recorded)
	}
	drop := dropRecord(status.ReplicasAnnotation)
	left, had := w.GetAnnotations()[status.ReplicasAsleepAnnotation]
	at := int64(0)
	if had {
		drop["annotations"].(map[string]any)[status.ReplicasAsleepAnnotation] = nil
		if at, err = strconv.ParseInt(left, 10, 32); err != nil || at < 0 {
			return nil, "", fmt.Errorf("%s: annotation %s=%q is not a replica count", id, status.ReplicasAsleepAnnotation, left)
		}
	}
	current := SpecReplicas(w)
	if current > at {
		return map[string]any{"metadata": drop},
			fmt.Sprintf("leave %s at %d replicas: scaled since nsman scaled it down; drop its record of %d", id, current, n), nil
	}
	return map[string]any{"metadata": drop, "spec": map[string]any{"replicas": n}}, fmt.Sprintf("scale %s from %d to %d", id, current, n), nil
}

// Awake: scaled above zero, or its replicas unset (1), and above the
// replicas its record says nsman left it at.
func (replicas) Awake(spec *Spec, annotations map[string]string) bool {
	return specReplicas(spec) > leftAt(annotations)
}

// Above: scaled above to.Replicas.
func (replicas) Above(spec *Spec, to policy.SleepTo) bool {
	return specReplicas(spec) > to.Replicas
}

func (replicas) Record() string       { return status.ReplicasAnnotation }
func (replicas) AwakeField() []string { return replicasField }
func (replicas) Annotations() []string {
	return []string{status.ReplicasAnnotation, status.ReplicasAsleepAnnotation}
}
func (replicas) Verb() string    { return "scale" }
func (replicas) FreesPods() bool { return true }

func (replicas) FreesLoadBalancer() bool { return false }

func (replicas) Doc() Doc {
	return Doc{
		Kinds:  "Deployment, StatefulSet, Argo Rollout, any kind with a scale subresource",
		Asleep: "`spec.replicas: 0`, or the action's `replicas`",
		Record: "`" + status.ReplicasAnnotation + "`: the count it had; `" + status.ReplicasAsleepAnnotation + "`: the action's `replicas`, when above 0",
		Woken:  "the count back",
	}
}

// leftAt is the replicas a workload with annotations was left at by the
// sleep its record tells of: status.ReplicasAsleepAnnotation's, 0 when it
// is absent or not a count, or when no record is there (no sleep of
// nsman's left it anywhere).
func leftAt(annotations map[string]string) int64 {
	if _, recorded := annotations[status.ReplicasAnnotation]; !recorded {
		return 0
	}
	n, err := strconv.ParseInt(annotations[status.ReplicasAsleepAnnotation], 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// specReplicas is spec's replicas, 1 when unset.
func specReplicas(spec *Spec) int64 {
	if spec.Replicas == nil {
		return 1
	}
	return *spec.Replicas
}

// replicasField is spec.replicas in fieldsV1 keys, made once: a sweep while
// asleep asks it of every workload awake.
var replicasField = []string{"f:spec", "f:replicas"}

// SpecReplicas is spec.replicas, which defaults to 1 when unset.
func SpecReplicas(w *unstructured.Unstructured) int64 {
	n, found, err := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if err != nil || !found {
		return 1
	}
	return n
}
