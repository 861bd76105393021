package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
)

// Namespace is what a sweep reads of a namespace: what its managers and
// rules decide on, and what writes to it are conditional on.
type Namespace struct {
	Name        string
	UID         types.UID
	Created     time.Time
	Terminating bool
	// Deleting is the deletionTimestamp of a terminating namespace.
	Deleting time.Time
	// Labels are what rules select by, pairs the rules' records by key
	// (PairAnnotationPrefix annotations).
	Labels          PackedLabels
	ResourceVersion string
	Pairs           Annotations
	// Hold is the namespace's HoldAnnotation, empty when it has none;
	// Expires its policy.ExpiresAnnotation, Touched its
	// policy.TouchedAnnotation.
	Hold, Expires, Touched string
	// Wake is the namespace's WakeAnnotation, empty when it has none.
	Wake string
	// NotifyChannel is its status.NotifyChannelAnnotation, cut at
	// maxNotifyChannel bytes; empty when it has none.
	NotifyChannel string
	// OwnerMarkers are its annotations that name its owner
	// (owner.Annotations), each cut at owner.MaxMarker+1 bytes; nil for
	// none. Its labels hold the rest of its markers.
	OwnerMarkers Annotations
}

// Marks are what ns carries that may name its owner, an Application
// named by app name alone being in argoCDNamespace.
func (ns Namespace) Marks(argoCDNamespace string) owner.Marks {
	return owner.Marks{Namespace: ns.Name, Label: ns.Labels.Lookup, Annotations: ns.OwnerMarkers.Map(), ArgoCDNamespace: argoCDNamespace}
}

// NamespaceOf is what a sweep keeps of namespace m, listed as metadata.
func NamespaceOf(m *metav1.PartialObjectMetadata) Namespace {
	info := Namespace{Name: m.Name, UID: m.UID, Created: m.CreationTimestamp.Time, Terminating: m.DeletionTimestamp != nil,
		Labels: PackLabels(m.Name, m.Labels), ResourceVersion: m.ResourceVersion}
	if m.DeletionTimestamp != nil {
		info.Deleting = m.DeletionTimestamp.Time
	}
	info.Hold, info.Expires, info.Touched = m.Annotations[status.HoldAnnotation], m.Annotations[policy.ExpiresAnnotation], m.Annotations[policy.TouchedAnnotation]
	info.Wake = m.Annotations[status.WakeAnnotation]
	info.NotifyChannel = cut(m.Annotations[status.NotifyChannelAnnotation], maxNotifyChannel)
	for k, v := range m.Annotations {
		switch {
		case strings.HasPrefix(k, status.PairAnnotationPrefix):
			info.Pairs = info.Pairs.with(k, v)
		case slices.Contains(ownerAnnotations, k):
			info.OwnerMarkers = info.OwnerMarkers.with(k, cut(v, owner.MaxMarker+1))
		}
	}
	return info
}

// MetadataLister lists a core resource (namespaces, pods), metadata only.
func (rd Reader) MetadataLister(resource string) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	client := rd.Clients.Metadata.Resource(corev1.SchemeGroupVersion.WithResource(resource))
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	}
}

// EachItem calls fn with every object that list returns for opts, in pages
// of pageSize with client-go's pager: the page in hand, and the next one
// being fetched. An expired continue token ends it with the error (the
// pager falls back to a full list only in List, which holds every page).
func EachItem[T runtime.Object](ctx context.Context, pageSize int64, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (runtime.Object, error), fn func(T)) error {
	p := pager.New(list)
	p.PageSize, p.PageBufferSize = pageSize, 0
	return p.EachListItem(ctx, opts, func(o runtime.Object) error {
		item, ok := o.(T)
		if !ok {
			return fmt.Errorf("unexpected list item %T", o)
		}
		fn(item)
		return nil
	})
}

// ManagerResource is the NamespaceManager resource, served by the original
// CRD and by nsman's.
var ManagerResource = schema.GroupVersionResource{Group: policy.Group, Version: policy.Version, Resource: policy.Resource}

// Clients are the API clients a sweep uses. All share one APIObserver.
type Clients struct {
	// Managers is a REST client for NamespaceManagers' API group
	// (k8s.consol.de/v1beta1, JSON), whichever CRD serves them: a sweep
	// lists and patches managers through it, decoding only what it reads.
	Managers rest.Interface
	// Dynamic reads and scales workloads.
	Dynamic dynamic.Interface
	// Kube lists pods and Jobs, deletes namespaces, writes Events and
	// discovers whether the CRD has a status subresource.
	Kube kubernetes.Interface
	// Metadata lists namespaces, and pods past PodIndexAfter checks,
	// without their specs.
	Metadata metadata.Interface
	// Observer supplies the server's clock and counts requests.
	Observer *APIObserver
}

// Reader reads the cluster for a sweep: managers in pages of pageSize
// (those of namespace and labelSelector, when set), namespaces, and one
// object again by name.
type Reader struct {
	Clients                  Clients
	PageSize                 int64
	Namespace, LabelSelector string
	Log                      *slog.Logger
}

// RESTClient is the REST client of the typed clients for gv, of the
// activity resources' group versions.
func (rd Reader) RESTClient(gv schema.GroupVersion) rest.Interface {
	switch gv {
	case appsv1.SchemeGroupVersion:
		return rd.Clients.Kube.AppsV1().RESTClient()
	case batchv1.SchemeGroupVersion:
		return rd.Clients.Kube.BatchV1().RESTClient()
	}
	return rd.Clients.Kube.CoreV1().RESTClient()
}

// NamespaceNow reads one namespace again, with a list by name: nsman may
// list namespaces, not get them.
func (rd Reader) NamespaceNow(ctx context.Context, name string) (Namespace, bool, error) {
	list, err := rd.Clients.Metadata.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil || len(list.Items) == 0 {
		return Namespace{}, false, err
	}
	return NamespaceOf(&list.Items[0]), true, nil
}

// WithoutTouch is ns without its touched annotation: a decision of no IDLE
// policy does not change with it.
func (ns Namespace) WithoutTouch() Namespace {
	ns.Touched = ""
	return ns
}
