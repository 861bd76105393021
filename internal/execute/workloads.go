package execute

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
)

// Workload resources SCALE_DOWN acts on.
var (
	DeploymentsResource  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	StatefulSetsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	workloadResources    = map[string]schema.GroupVersionResource{
		policy.KindDeployment:  DeploymentsResource,
		policy.KindStatefulSet: StatefulSetsResource,
	}
)

// EachWorkload calls change once with each Deployment and StatefulSet of
// namespace that selectors select (all, without), and returns the effects
// and the errors joined: one workload that fails stops no other.
func EachWorkload(ctx context.Context, clients cluster.Clients, namespace string, selectors []policy.Selector,
	change func(schema.GroupVersionResource, string, *unstructured.Unstructured) (string, error)) ([]string, error) {
	if len(selectors) == 0 {
		selectors = []policy.Selector{{Kind: policy.KindDeployment}, {Kind: policy.KindStatefulSet}}
	}
	var (
		effects []string
		errs    []error
		done    = map[string]bool{}
	)
	for _, sel := range selectors {
		resource := workloadResources[sel.Kind]
		// Workloads are whole objects a tenant writes: paged, and decoded
		// one at a time into the few fields a change reads.
		list := func() *rest.Request {
			return clients.Kube.AppsV1().RESTClient().Get().Namespace(namespace).Resource(resource.Resource)
		}
		var selected []*unstructured.Unstructured
		err := cluster.EachStreamed(ctx, workloadPage, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel.Labels).String()}, list, func(f *WorkloadFields) error {
			w, err := f.Unstructured(resource, sel.Kind)
			if err == nil {
				selected = append(selected, w)
			}
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s in %s: %w", resource.Resource, namespace, err))
		}
		for _, w := range selected {
			id := sel.Kind + "/" + w.GetName()
			if done[id] {
				continue // selected twice
			}
			done[id] = true
			effect, err := change(resource, sel.Kind, w)
			if err != nil {
				errs = append(errs, err)
			}
			if effect != "" {
				effects = append(effects, effect)
			}
		}
	}
	return effects, errors.Join(errs...)
}

// workloadPage is the page size of a namespace's workloads: each is decoded
// on its own (see eachStreamed), and what is kept of it is a few hundred
// bytes, so a page costs a request, not memory.
const workloadPage = 500

// WorkloadFields is what SCALE_DOWN and restore read of a workload: its
// name, version, replicas, record of them, and its pod template's requests
// (for what scaling it frees).
type WorkloadFields struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int64 `json:"replicas,omitempty"`
		Template struct {
			Spec cluster.PodRequests `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// Unstructured is f as the workload changes read it: these fields alone,
// and of the annotations ReplicasAnnotation alone.
func (f *WorkloadFields) Unstructured(resource schema.GroupVersionResource, kind string) (*unstructured.Unstructured, error) {
	var kept struct {
		Metadata struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec any `json:"spec"`
	}
	kept.Metadata.Name, kept.Metadata.Namespace, kept.Metadata.ResourceVersion = f.Metadata.Name, f.Metadata.Namespace, f.Metadata.ResourceVersion
	if v, ok := f.Metadata.Annotations[status.ReplicasAnnotation]; ok {
		kept.Metadata.Annotations = map[string]string{status.ReplicasAnnotation: v}
	}
	kept.Spec = f.Spec
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&kept)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, f.Metadata.Namespace, f.Metadata.Name, err)
	}
	w := &unstructured.Unstructured{Object: obj}
	w.SetAPIVersion(resource.GroupVersion().String())
	w.SetKind(kind)
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

// ScaleToZero sets one workload's replicas to zero, through wr, and records the count it
// had, overwriting any record: a record is always the count the workload had
// when nsman last scaled it to zero, so an older one, left by a scale-down
// undone by hand since, must not survive to be restored. A workload already
// at zero is not written to, and keeps its record.
//
// It returns the workload as scaled from, nil when it was not.
func ScaleToZero(ctx context.Context, clients cluster.Clients, wr write.Writer, resource schema.GroupVersionResource, kind string, w *unstructured.Unstructured) (string, *unstructured.Unstructured, error) {
	var from *unstructured.Unstructured
	effect, err := ChangeWorkload(ctx, clients, wr, resource, w, func(w *unstructured.Unstructured) (map[string]any, string, error) {
		replicas := SpecReplicas(w)
		if replicas == 0 {
			from = nil
			return nil, "", nil
		}
		from = w
		return map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: strconv.FormatInt(replicas, 10)}},
			"spec":     map[string]any{"replicas": 0},
		}, fmt.Sprintf("scale %s/%s from %d to 0", kind, w.GetName(), replicas), nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("scale %s %s/%s: %w", kind, w.GetNamespace(), w.GetName(), err)
	}
	if effect == "" {
		// Already at zero, or deleted meanwhile.
		from = nil
	}
	return effect, from, nil
}
