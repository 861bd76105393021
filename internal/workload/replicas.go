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
// spec.replicas: scaled to zero, the count it had recorded.
var Replicas Way = replicas{}

type replicas struct{}

// Sleep records the count w had, overwriting any record: a record is always
// the count the workload had when nsman last scaled it to zero, so an older
// one, left by a sleep undone by hand since, must not survive to be
// restored.
func (replicas) Sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	n := SpecReplicas(w)
	if n == 0 {
		return nil, ""
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: strconv.FormatInt(n, 10)}},
		"spec":     map[string]any{"replicas": 0},
	}, fmt.Sprintf("scale %s from %d to 0", id, n)
}

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
	if current := SpecReplicas(w); current != 0 {
		return map[string]any{"metadata": drop},
			fmt.Sprintf("leave %s at %d replicas: scaled since nsman scaled it down; drop its record of %d", id, current, n), nil
	}
	return map[string]any{"metadata": drop, "spec": map[string]any{"replicas": n}}, fmt.Sprintf("scale %s from 0 to %d", id, n), nil
}

// Awake: scaled above zero, or its replicas unset (1).
func (replicas) Awake(spec *Spec, _ map[string]string) bool {
	return spec.Replicas == nil || *spec.Replicas > 0
}

func (replicas) Record() string        { return status.ReplicasAnnotation }
func (replicas) AwakeField() []string  { return replicasField }
func (replicas) Annotations() []string { return []string{status.ReplicasAnnotation} }
func (replicas) Verb() string          { return "scale" }
func (replicas) FreesPods() bool       { return true }

func (replicas) Doc() Doc {
	return Doc{
		Kinds:  "Deployment, StatefulSet, Argo Rollout, any kind with a scale subresource",
		Asleep: "`spec.replicas: 0`",
		Record: "`" + status.ReplicasAnnotation + "`: the count it had",
		Woken:  "the count back",
	}
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
