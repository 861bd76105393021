package execute

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/workload"
)

// MaxPatchedBytes bounds an object of a patch's kind as listed (a Flux
// HelmRelease with its values inline, say): one larger is not decoded,
// and the error says so. What is decoded is cut, as it is, to what the
// patch reads (workload.KeepPatched).
const MaxPatchedBytes = 1 << 20

// patchedPage is the page size of a patch's kind: its objects are decoded
// whole, one at a time, then cut.
const patchedPage = 100

// eachPatched lists the objects of kind, a patch's, in namespace as opts
// says, calling fn with each as a Workload (see patchedWorkload) and
// endPage after each page; an object that cannot be read is fn's error
// argument, not the list's.
func eachPatched(ctx context.Context, clients cluster.Clients, kind probe.Kind, namespace string, opts metav1.ListOptions,
	fn func(*Workload, error), endPage func() error) error {
	list := func() *rest.Request {
		return clients.Kube.Discovery().RESTClient().Get().AbsPath(probe.ResourcePath(kind.Resource, namespace)...)
	}
	return cluster.EachStreamedPaged(ctx, patchedPage, opts, list, func(raw *json.RawMessage) error {
		fn(patchedWorkload(kind, *raw))
		return nil
	}, endPage)
}

// patchedWorkload is raw, an object of kind as listed, as a sleep or a
// wake by its patch reads it.
func patchedWorkload(kind probe.Kind, raw json.RawMessage) (*Workload, error) {
	if len(raw) > MaxPatchedBytes {
		return nil, fmt.Errorf("%s: an object of %d bytes as listed, more than the %d nsman reads of one", kind.Name, len(raw), MaxPatchedBytes)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", kind.Name, err)
	}
	w := &unstructured.Unstructured{Object: obj}
	if recorded := w.GetAnnotations()[status.PatchedAnnotation]; len(recorded) > workload.MaxPatchedRecord {
		return nil, fmt.Errorf("%s %s/%s: its record is %d bytes, more than the %d nsman reads of it", kind.Name, w.GetNamespace(), w.GetName(), len(recorded), workload.MaxPatchedRecord)
	}
	workload.KeepPatched(kind.Way, obj, keptLabels, keptAnnotations)
	w.SetAPIVersion(kind.Resource.GroupVersion().String())
	w.SetKind(kind.Name)
	return &Workload{Object: w}, nil
}
