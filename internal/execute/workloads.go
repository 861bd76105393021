package execute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
)

// EachKind calls change once with each workload of namespace that
// selections select, kind after kind, and returns the effects and the
// errors joined: one workload that fails stops no other. A kind the
// cluster does not serve (KEDA not installed) has no workloads. Optional:
// a kind found by discovery that the caller may not list is skipped, and
// named in skipped, rather than an error: nsman writes only to the kinds
// its RBAC grants. The selections are listed at once, then changed one
// after the other: a sleep waits on one list per namespace rather than
// one per kind (measured: make bench's sleep rows).
func EachKind(ctx context.Context, clients cluster.Clients, namespace string, selections []probe.Selection, optional bool,
	change func(probe.Kind, *unstructured.Unstructured) (string, error)) (effects, skipped []string, err error) {
	listed := make([]selected, len(selections))
	var wg sync.WaitGroup
	for i, sel := range selections {
		wg.Go(func() { listed[i] = selectIn(ctx, clients, namespace, sel) })
	}
	wg.Wait()
	var errs []error
	done := map[schema.GroupResource]map[string]bool{}
	for i, sel := range selections {
		gr := sel.Kind.Resource.GroupResource()
		if optional && sel.Kind.Found && apierrors.IsForbidden(listed[i].err) {
			skipped = append(skipped, gr.String())
			continue
		}
		errs = append(errs, listed[i].err)
		if done[gr] == nil {
			done[gr] = map[string]bool{}
		}
		for _, w := range listed[i].workloads {
			if done[gr][w.GetName()] {
				continue // selected by two selections: changed once
			}
			done[gr][w.GetName()] = true
			effect, err := change(sel.Kind, w)
			if err != nil {
				errs = append(errs, err)
			}
			if effect != "" {
				effects = append(effects, effect)
			}
		}
	}
	return effects, skipped, errors.Join(errs...)
}

// selected is what one selection selects in a namespace, and why the
// list stopped, if it did (workloads then holds those read before).
type selected struct {
	workloads []*unstructured.Unstructured
	err       error
}

// selectIn lists what sel selects in namespace, leaving out the objects
// of a kind found by discovery that another controls.
func selectIn(ctx context.Context, clients cluster.Clients, namespace string, sel probe.Selection) selected {
	resource := sel.Kind.Resource
	// Workloads are whole objects a tenant writes: paged, and decoded one
	// at a time into the few fields a change reads.
	list := func() *rest.Request {
		return clients.Kube.Discovery().RESTClient().Get().AbsPath(probe.ResourcePath(resource, namespace)...)
	}
	var out selected
	err := cluster.EachStreamed(ctx, workloadPage, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel.Labels).String()}, list, func(f *WorkloadFields) error {
		if sel.Kind.Found && f.controlled() {
			return nil // its controller's to scale
		}
		w, err := f.Unstructured(sel.Kind)
		if err == nil {
			out.workloads = append(out.workloads, w)
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		out.err = fmt.Errorf("list %s in %s: %w", resource.GroupResource(), namespace, err)
	}
	return out
}

// workloadPage is the page size of a namespace's workloads: each is decoded
// on its own (see eachStreamed), and what is kept of it is a few hundred
// bytes, so a page costs a request, not memory.
const workloadPage = 500

// WorkloadFields is what a sleep and a wake read of a workload: its name,
// version, whether it is controlled or kept awake, its replicas or
// suspend, its records, and its pod template's requests (for what scaling
// it frees).
type WorkloadFields struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			Controller *bool `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int64 `json:"replicas,omitempty"`
		Suspend  *bool  `json:"suspend,omitempty"`
		Template struct {
			Spec cluster.PodRequests `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// keptAnnotations are the annotations a sleep or a wake reads.
var keptAnnotations = []string{status.ReplicasAnnotation, status.SuspendAnnotation, status.PausedReplicasAnnotation, status.KedaPausedReplicas,
	status.FluxReconcileAnnotation, status.ReconcileAnnotation}

// keptLabels are the labels a sleep or a wake reads.
var keptLabels = []string{status.KeepAwakeLabel, status.FluxNameLabel}

// controlled reports whether another object controls f's (a Deployment its
// ReplicaSets).
func (f *WorkloadFields) controlled() bool {
	return slices.ContainsFunc(f.Metadata.OwnerReferences, func(o struct {
		Controller *bool `json:"controller"`
	}) bool {
		return o.Controller != nil && *o.Controller
	})
}

// Unstructured is f as the workload changes read it: these fields alone, of
// the annotations keptAnnotations alone and of the labels KeepAwakeLabel.
func (f *WorkloadFields) Unstructured(kind probe.Kind) (*unstructured.Unstructured, error) {
	var kept struct {
		Metadata struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels,omitempty"`
			Annotations     map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec any `json:"spec"`
	}
	kept.Metadata.Name, kept.Metadata.Namespace, kept.Metadata.ResourceVersion = f.Metadata.Name, f.Metadata.Namespace, f.Metadata.ResourceVersion
	for _, key := range keptAnnotations {
		if v, ok := f.Metadata.Annotations[key]; ok {
			if kept.Metadata.Annotations == nil {
				kept.Metadata.Annotations = map[string]string{}
			}
			kept.Metadata.Annotations[key] = v
		}
	}
	for _, key := range keptLabels {
		if v, ok := f.Metadata.Labels[key]; ok {
			if kept.Metadata.Labels == nil {
				kept.Metadata.Labels = map[string]string{}
			}
			kept.Metadata.Labels[key] = v
		}
	}
	kept.Spec = f.Spec
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&kept)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind.Name, f.Metadata.Namespace, f.Metadata.Name, err)
	}
	w := &unstructured.Unstructured{Object: obj}
	w.SetAPIVersion(kind.Resource.GroupVersion().String())
	w.SetKind(kind.Name)
	return w, nil
}

// ChangeWorkload applies the patch that change computes from the workload,
// conditional on the version it was computed from; when the workload changed
// meanwhile, it is read again and the patch recomputed, so that a recorded
// count is never stale. change returns a nil patch when nothing is to be
// done. A workload deleted meanwhile needs nothing.
func ChangeWorkload(ctx context.Context, clients cluster.Clients, w write.Writer, resource schema.GroupVersionResource, obj *unstructured.Unstructured,
	change func(*unstructured.Unstructured) (patch map[string]any, effect string, err error)) (string, error) {
	var effect string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		patch, e, err := change(obj)
		if err != nil || patch == nil {
			effect = e
			return err
		}
		meta, _ := patch["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			patch["metadata"] = meta
		}
		meta["resourceVersion"] = obj.GetResourceVersion()
		effect = e
		err = w.PatchWorkload(ctx, resource, obj.GetNamespace(), obj.GetName(), []byte(write.MustJSON(patch)))
		if apierrors.IsConflict(err) {
			fresh, getErr := reread(ctx, clients, resource, obj)
			if getErr != nil {
				return getErr
			}
			obj = fresh
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	return effect, err
}

// reread reads a workload again with a list by name, so that nsman needs no
// permission beyond list and patch.
func reread(ctx context.Context, clients cluster.Clients, resource schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	list, err := clients.Dynamic.Resource(resource).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", obj.GetName()).String(),
	})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewNotFound(resource.GroupResource(), obj.GetName())
	}
	return &list.Items[0], nil
}

// SpecReplicas is spec.replicas, which defaults to 1 when unset.
func SpecReplicas(w *unstructured.Unstructured) int64 {
	n, found, err := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if err != nil || !found {
		return 1
	}
	return n
}

// Sleep puts one workload of kind to sleep, through wr, in one request that
// records what it undoes (see way). A workload asleep already, or labelled
// KeepAwakeLabel, is not written to.
//
// It returns the workload as it was before, nil when it was not written to.
func Sleep(ctx context.Context, clients cluster.Clients, wr write.Writer, kind probe.Kind, w *unstructured.Unstructured) (string, *unstructured.Unstructured, error) {
	id := kind.Name + "/" + w.GetName()
	if w.GetLabels()[status.KeepAwakeLabel] == "true" {
		return "leave " + id + " awake: labelled " + status.KeepAwakeLabel, nil, nil
	}
	var from *unstructured.Unstructured
	effect, err := ChangeWorkload(ctx, clients, wr, kind.Resource, w, func(w *unstructured.Unstructured) (map[string]any, string, error) {
		patch, effect := ways[kind.Way].sleep(id, w)
		from = w
		return fluxOff(patch, effect, w)
	})
	if err != nil {
		return "", nil, fmt.Errorf("%s %s %s/%s: %w", sleepVerb(kind), kind.Name, w.GetNamespace(), w.GetName(), err)
	}
	if effect == "" {
		// Asleep already, or deleted meanwhile.
		from = nil
	}
	return effect, from, nil
}

// fluxOff adds to patch, which puts w to sleep, Flux's switch that keeps it
// from reverting the sleep, when Flux applies w and the switch is not off
// already, with the record of its value.
func fluxOff(patch map[string]any, effect string, w *unstructured.Unstructured) (map[string]any, string, error) {
	prior, had := w.GetAnnotations()[status.FluxReconcileAnnotation]
	if patch == nil || w.GetLabels()[status.FluxNameLabel] == "" || had && prior == "disabled" {
		return patch, effect, nil
	}
	annotations(patch)[status.FluxReconcileAnnotation] = "disabled"
	annotations(patch)[status.ReconcileAnnotation] = prior
	return patch, effect + "; Flux reconcile disabled", nil
}

// fluxBack adds to patch, which wakes w (nil: w has no record of a sleep),
// the value of Flux's switch recorded when nsman turned it off.
func fluxBack(patch map[string]any, effect string, w *unstructured.Unstructured) (map[string]any, string) {
	prior, recorded := w.GetAnnotations()[status.ReconcileAnnotation]
	if !recorded {
		return patch, effect
	}
	if patch == nil {
		patch, effect = map[string]any{}, "restore Flux's reconcile of "+w.GetKind()+"/"+w.GetName()
	} else {
		effect += "; Flux reconcile restored"
	}
	var value any // null removes it
	if prior != "" {
		value = prior
	}
	annotations(patch)[status.FluxReconcileAnnotation] = value
	annotations(patch)[status.ReconcileAnnotation] = nil
	return patch, effect
}

// annotations is the annotations map of merge patch patch, made if need be.
func annotations(patch map[string]any) map[string]any {
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		patch["metadata"] = meta
	}
	a, _ := meta["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		meta["annotations"] = a
	}
	return a
}

// sleepVerb is what a sleep of kind does, for its errors.
func sleepVerb(kind probe.Kind) string {
	switch kind.Way {
	case probe.WaySuspend:
		return "suspend"
	case probe.WayPause:
		return "pause"
	}
	return "scale"
}
