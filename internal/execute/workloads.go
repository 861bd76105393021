package execute

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/workload"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// EachKind calls change once with each workload of namespace that
// selections select, kind after kind, and returns the effects and the
// errors joined: one workload that fails stops no other. A kind the
// cluster does not serve (KEDA not installed) has no workloads. Optional:
// a kind found by discovery that the caller may not list is skipped, and
// named in skipped, rather than an error: nsman writes only to the kinds
// its RBAC grants. The selections are listed at once, each a page ahead of
// the changes: a sleep waits on one list per namespace rather than one per
// kind (measured: make bench's sleep rows), and holds at most three pages
// of small Workloads per selection (the one changed, the one waiting, the
// one read), whatever the namespace holds.
func EachKind(ctx context.Context, clients cluster.Clients, namespace string, selections []probe.Selection, optional bool,
	change func(probe.Kind, *Workload) (string, error)) (effects, skipped []string, err error) {
	// Each selection's pages are received to the last, in turn: every
	// lister ends, and none waits on a receiver gone.
	pages := make([]chan selected, len(selections))
	for i, sel := range selections {
		pages[i] = make(chan selected, 1)
		go func() {
			defer close(pages[i])
			selectIn(ctx, clients, namespace, sel, pages[i])
		}()
	}
	var errs []error
	// done names the workloads changed of a kind two selections select, so
	// that the second changes none again from its older copy.
	twice := map[schema.GroupResource]int{}
	for _, sel := range selections {
		twice[sel.Kind.Resource.GroupResource()]++
	}
	done := map[schema.GroupResource]map[string]bool{}
	for i, sel := range selections {
		gr := sel.Kind.Resource.GroupResource()
		for page := range pages[i] {
			if optional && sel.Kind.Found && apierrors.IsForbidden(page.err) {
				skipped = append(skipped, gr.String())
				continue
			}
			errs = append(errs, page.err)
			for _, w := range page.workloads {
				if twice[gr] > 1 {
					if done[gr][w.Object.GetName()] {
						continue
					}
					if done[gr] == nil {
						done[gr] = map[string]bool{}
					}
					done[gr][w.Object.GetName()] = true
				}
				effect, err := change(sel.Kind, w)
				if err != nil {
					errs = append(errs, err)
				}
				if effect != "" {
					effects = append(effects, effect)
				}
			}
		}
	}
	return effects, skipped, errors.Join(errs...)
}

// selected is what one page of a selection selects in a namespace, and
// why the list stopped, if it did, or why a workload of it could not be
// read.
type selected struct {
	workloads []*Workload
	err       error
}

// selectIn lists what sel selects in namespace, leaving out the objects of
// a kind found by discovery that another controls, and sends each page to
// out once its response is closed, the last with why the list stopped.
func selectIn(ctx context.Context, clients cluster.Clients, namespace string, sel probe.Selection, out chan<- selected) {
	resource := sel.Kind.Resource
	// Workloads are whole objects a tenant writes: paged, and decoded one
	// at a time into the few fields a change reads (see WorkloadFields).
	list := func() *rest.Request {
		return clients.Kube.Discovery().RESTClient().Get().AbsPath(probe.ResourcePath(resource, namespace)...)
	}
	var page selected
	var invalid []error
	send := func() error {
		page.err = errors.Join(invalid...)
		out <- page
		page, invalid = selected{}, nil
		return nil
	}
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel.Labels).String(), FieldSelector: sel.Fields}
	var err error
	if whole, ok := sel.Kind.Way.(workload.Whole); ok {
		err = eachWhole(ctx, clients, sel.Kind, whole, namespace, opts, func(w *Workload, err error) {
			if err != nil {
				invalid = append(invalid, err)
			} else {
				page.workloads = append(page.workloads, w)
			}
		}, send)
	} else {
		err = selectWorkloads(ctx, sel, opts, list, &page, &invalid, send)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		invalid = append(invalid, fmt.Errorf("list %s in %s: %w", resource.GroupResource(), namespace, err))
	}
	if len(page.workloads) > 0 || len(invalid) > 0 {
		_ = send()
	}
}

// selectWorkloads lists what sel selects into page, sending each (see
// selectIn).
func selectWorkloads(ctx context.Context, sel probe.Selection, opts metav1.ListOptions, list func() *rest.Request, page *selected, invalid *[]error, send func() error) error {
	return cluster.EachStreamedPaged(ctx, workloadPage, opts, list, func(f *WorkloadFields) error {
		if sel.Kind.Found && f.controlled() {
			return nil // its controller's to scale
		}
		w, err := f.Workload(sel.Kind)
		if err != nil {
			*invalid = append(*invalid, err)
			return nil
		}
		page.workloads = append(page.workloads, w)
		return nil
	}, send)
}

// workloadPage is the page size of a namespace's workloads: each is decoded
// on its own (see WorkloadFields), and what is kept of it is a few hundred
// bytes, so a page costs a request, not memory.
const workloadPage = 500

// MaxRequestsBytes bounds the workloads whose pod template is read for what
// scaling them frees: one larger, as listed, is slept and woken all the
// same, and its requests are said not counted (see Workload.Frees): one
// object of the most containers within it (about 2,300 of 215 bytes)
// allocates about 5 MiB while it is decoded and summed, then none of it is
// kept (TestWorkloadFieldsBoundAWorkloadOfManyContainers).
const MaxRequestsBytes = 512 << 10

// maxKeptValue bounds a kept annotation's value (see keptAnnotations):
// nsman's records, a replica count, Flux's switch, all a few bytes (a
// way's longer record has its own bound: workload.AnnotationBytes). A
// workload whose value is longer is not changed, and the error says so.
const maxKeptValue = 256

// Workload is a workload as a sleep, a wake or a restore reads it: the few
// fields they read, never the object whole.
type Workload struct {
	// Object holds its name, namespace and resourceVersion, the labels
	// keptLabels, the annotations keptAnnotations, spec.replicas and
	// spec.suspend: what the kinds' ways read (see workload.Way).
	Object *unstructured.Unstructured
	// Requests is what one pod of its template requests.
	Requests PodRequests
}

// PodRequests is what one pod of a workload's template requests, as the
// scheduler counts it (containers, init containers and sidecars, overhead,
// pod-level resources).
type PodRequests struct {
	// MilliCPU and Memory (bytes) are the requests.
	MilliCPU, Memory int64
	// Uncounted is the size of a workload larger than MaxRequestsBytes
	// as listed, whose template was not read; 0 when it was.
	Uncounted int
}

// Frees is what scaling w from its replicas (default 1) to to's frees:
// the replicas it loses × one pod's requests. counted is false when w's
// template was not read (see MaxRequestsBytes).
func (w *Workload) Frees(to policy.SleepTo) (freed report.Reclaimed, counted bool) {
	n := max(SpecReplicas(w.Object)-to.Replicas, 0)
	freed.CPU = *resource.NewMilliQuantity(n*w.Requests.MilliCPU, resource.DecimalSI)
	freed.Memory = *resource.NewQuantity(n*w.Requests.Memory, resource.BinarySI)
	freed.Storage = *resource.NewQuantity(0, resource.BinarySI)
	return freed, w.Requests.Uncounted == 0
}

// WorkloadFields is what a sleep and a wake read of a workload: its name,
// version, whether it is controlled or kept awake, its replicas or
// suspend, its records, and what one pod of its template requests (for
// what scaling it frees). A list is decoded one item at a time into it.
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
	// Spec is what the kinds' ways read of a workload's spec.
	Spec workload.Spec `json:"spec"`
	// Requests is summed from spec.template.spec as it is decoded: the
	// containers are not kept.
	Requests PodRequests `json:"-"`
}

// UnmarshalJSON decodes data, one workload as listed, into f, and sums its
// pod template's requests, unless data is larger than MaxRequestsBytes. A
// template that does not decode as a pod's frees nothing that can be told.
func (f *WorkloadFields) UnmarshalJSON(data []byte) error {
	type fields WorkloadFields // f's fields, without this method
	if err := json.Unmarshal(data, (*fields)(f)); err != nil {
		return err
	}
	if len(data) > MaxRequestsBytes {
		f.Requests = PodRequests{Uncounted: len(data)}
		return nil
	}
	var template struct {
		Spec struct {
			Template struct {
				Spec cluster.PodRequests `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &template); err != nil {
		f.Requests = PodRequests{}
		return nil
	}
	requests := resourcehelper.PodRequests(&corev1.Pod{Spec: template.Spec.Template.Spec.Spec()}, resourcehelper.PodResourcesOptions{})
	f.Requests = PodRequests{MilliCPU: requests.Cpu().MilliValue(), Memory: requests.Memory().Value()}
	return nil
}

// keptAnnotations are the annotations a sleep or a wake reads: the kinds'
// ways' and Flux's.
var keptAnnotations = append(workload.Annotations(), status.FluxReconcileAnnotation, status.ReconcileAnnotation)

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

// Workload is f as the workload changes read it: these fields alone, of
// the annotations keptAnnotations alone (each at most maxKeptValue bytes)
// and of the labels keptLabels.
func (f *WorkloadFields) Workload(kind probe.Kind) (*Workload, error) {
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
			if bound := workload.AnnotationBytes(key, maxKeptValue); len(v) > bound {
				return nil, fmt.Errorf("%s %s/%s: annotation %s is %d bytes, more than the %d nsman reads of it", kind.Name, f.Metadata.Namespace, f.Metadata.Name, key, len(v), bound)
			}
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
	return &Workload{Object: w, Requests: f.Requests}, nil
}

// ChangeWorkload applies the patch that change computes from the workload,
// conditional on the version it was computed from; when the workload changed
// meanwhile, it is read again (decoded as listed: see reread) and the patch
// recomputed, so that a recorded count is never stale. change returns a nil
// patch when nothing is to be done. A workload deleted meanwhile needs
// nothing. A patch cut by ctx's end is an error, as any other.
func ChangeWorkload(ctx context.Context, clients cluster.Clients, w write.Writer, kind probe.Kind, obj *Workload,
	change func(*Workload) (patch map[string]any, effect string, err error)) (string, error) {
	var effect string
	err := write.RetryOnConflict(func() error {
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
		meta["resourceVersion"] = obj.Object.GetResourceVersion()
		effect = e
		err = w.PatchWorkload(ctx, kind.Resource, obj.Object.GetNamespace(), obj.Object.GetName(), []byte(write.MustJSON(patch)))
		if apierrors.IsConflict(err) {
			fresh, getErr := reread(ctx, clients, kind, obj.Object)
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
// permission beyond list and patch, decoded as a list of workloads is (see
// WorkloadFields): no second copy of it whole.
func reread(ctx context.Context, clients cluster.Clients, kind probe.Kind, obj *unstructured.Unstructured) (*Workload, error) {
	list := func() *rest.Request {
		return clients.Kube.Discovery().RESTClient().Get().AbsPath(probe.ResourcePath(kind.Resource, obj.GetNamespace())...)
	}
	var fresh *Workload
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()}
	var err error
	if whole, ok := kind.Way.(workload.Whole); ok {
		var readErr error
		err = eachWhole(ctx, clients, kind, whole, obj.GetNamespace(), byName, func(w *Workload, err error) { fresh, readErr = w, err }, nil)
		err = cmp.Or(err, readErr)
	} else {
		err = cluster.EachStreamed(ctx, workloadPage, byName, list, func(f *WorkloadFields) error {
			w, err := f.Workload(kind)
			fresh = w
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	if fresh == nil {
		return nil, apierrors.NewNotFound(kind.Resource.GroupResource(), obj.GetName())
	}
	return fresh, nil
}

// SpecReplicas is spec.replicas, which defaults to 1 when unset.
func SpecReplicas(w *unstructured.Unstructured) int64 { return workload.SpecReplicas(w) }

// Sleep puts one workload of kind to sleep as to says, through wr, in one
// request that records what it undoes (see workload.Way). A workload
// asleep already (at or below to's replicas, for a kind with replicas), or
// labelled KeepAwakeLabel, is not written to.
//
// It returns the workload as it was before, nil when it was not written to.
func Sleep(ctx context.Context, clients cluster.Clients, wr write.Writer, kind probe.Kind, listed *Workload, to policy.SleepTo) (string, *Workload, error) {
	w := listed.Object
	id := kind.Name + "/" + w.GetName()
	if w.GetLabels()[status.KeepAwakeLabel] == "true" {
		return "leave " + id + " awake: labelled " + status.KeepAwakeLabel, nil, nil
	}
	var from *Workload
	effect, err := ChangeWorkload(ctx, clients, wr, kind, listed, func(w *Workload) (map[string]any, string, error) {
		patch, effect := kind.Way.Sleep(id, w.Object, to)
		if from = w; patch == nil {
			from = nil // left as it is, perhaps saying why
		}
		return fluxOff(patch, effect, w.Object)
	})
	if err != nil {
		return "", nil, fmt.Errorf("%s %s %s/%s: %w", kind.Way.Verb(), kind.Name, w.GetNamespace(), w.GetName(), err)
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
