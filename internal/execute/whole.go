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

// MaxWholeBytes bounds an object of a kind whose way reads it whole (a
// patch's: a Flux HelmRelease with its values inline, say) as listed: one
// larger is not decoded, and the error says so. What is decoded is cut,
// as it is, to what the way reads (workload.Whole).
const MaxWholeBytes = 1 << 20

// wholePage is the page size of a kind read whole: its objects are
// decoded one at a time, then cut.
const wholePage = 100

// eachWhole lists the objects of kind, whose way reads them whole, in
// namespace as opts says, calling fn with each as a Workload (see
// wholeWorkload) and endPage after each page; an object that cannot be
// read is fn's error argument, not the list's.
func eachWhole(ctx context.Context, clients cluster.Clients, kind probe.Kind, way workload.Whole, namespace string, opts metav1.ListOptions,
	fn func(*Workload, error), endPage func() error) error {
	list := func() *rest.Request {
		return clients.Kube.Discovery().RESTClient().Get().AbsPath(probe.ResourcePath(kind.Resource, namespace)...)
	}
	return cluster.EachStreamedPaged(ctx, wholePage, opts, list, func(raw *json.RawMessage) error {
		fn(wholeWorkload(kind, way, *raw))
		return nil
	}, endPage)
}

// wholeWorkload is raw, an object of kind as listed, as a sleep or a
// wake by way reads it.
func wholeWorkload(kind probe.Kind, way workload.Whole, raw json.RawMessage) (*Workload, error) {
	if len(raw) > MaxWholeBytes {
		return nil, fmt.Errorf("%s: an object of %d bytes as listed, more than the %d nsman reads of one", kind.Name, len(raw), MaxWholeBytes)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", kind.Name, err)
	}
	w := &unstructured.Unstructured{Object: obj}
	if recorded := w.GetAnnotations()[status.PatchedAnnotation]; len(recorded) > workload.MaxPatchedRecord {
		return nil, fmt.Errorf("%s %s/%s: its record is %d bytes, more than the %d nsman reads of it", kind.Name, w.GetNamespace(), w.GetName(), len(recorded), workload.MaxPatchedRecord)
	}
	way.Keep(obj, keptLabels, keptAnnotations)
	w.SetAPIVersion(kind.Resource.GroupVersion().String())
	w.SetKind(kind.Name)
	return &Workload{Object: w}, nil
}
