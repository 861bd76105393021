package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// cronJob is a CronJob: suspended, and resumed only if nsman suspended it.
var cronJob = Known{
	Name: policy.KindCronJob, Resource: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"},
	Way: suspend{}, Why: "SCALE_DOWN and restore: CronJobs suspended",
}

// suspendField is spec.suspend in fieldsV1 keys, made once.
var suspendField = []string{"f:spec", "f:suspend"}

// suspend is a CronJob's way. One suspended before is not written to, and
// stays so.
type suspend struct{}

// Sleep suspends w; a CronJob has no replicas, and ignores to's.
func (suspend) Sleep(id string, w *unstructured.Unstructured, _ policy.SleepTo) (map[string]any, string) {
	if suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspend"); suspended {
		return nil, ""
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.SuspendAnnotation: "false"}},
		"spec":     map[string]any{"suspend": true},
	}, "suspend " + id
}

func (suspend) Wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
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

// Awake: not suspended.
func (suspend) Awake(spec *Spec, _ map[string]string) bool {
	return spec.Suspend == nil || !*spec.Suspend
}

// Above: a CronJob has no replicas to keep.
func (suspend) Above(*Spec, policy.SleepTo) bool { return true }

func (suspend) Record() string        { return status.SuspendAnnotation }
func (suspend) AwakeField() []string  { return suspendField }
func (suspend) Annotations() []string { return []string{status.SuspendAnnotation} }
func (suspend) Verb() string          { return "suspend" }

// FreesPods: a CronJob has no spec.template, and its Jobs' pods are its
// own: suspending it frees nothing counted.
func (suspend) FreesPods() bool { return false }

func (suspend) FreesLoadBalancer() bool { return false }

func (suspend) Doc() Doc {
	return Doc{
		Kinds:  "CronJob",
		Asleep: "`spec.suspend: true` (no new Job; one running already runs on)",
		Record: "`" + status.SuspendAnnotation + `: "false"` + "`",
		Woken:  "resumed; one suspended before the sleep is never touched, and stays suspended",
	}
}
