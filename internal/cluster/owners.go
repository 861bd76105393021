package cluster

import (
	"context"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/owner"
)

// EachOwner calls fn with every object of resource, a kind that may own a
// namespace, in every namespace, in pages of the sweep's page size, each
// decoded as it arrives: whole as JSON into owner.Item's fields when spec
// is set (the rest of each object, a tenant's to fill, is read past), as
// metadata only else. An error from fn ends the listing with it.
func (rd Reader) EachOwner(ctx context.Context, resource schema.GroupVersionResource, spec bool, fn func(*owner.Item) error) error {
	path := []string{"/apis", resource.Group, resource.Version, resource.Resource}
	if resource.Group == "" {
		path = []string{"/api", resource.Version, resource.Resource}
	}
	list := func() *rest.Request { return rd.Clients.Kube.Discovery().RESTClient().Get().AbsPath(path...) }
	if spec {
		return EachStreamed(ctx, rd.PageSize, metav1.ListOptions{}, list, fn)
	}
	return eachPage(ctx, asMetadata, rd.PageSize, metav1.ListOptions{}, list, func(body io.Reader) (metav1.ListMeta, error) {
		return listpage.DecodeMetadata(body, fn, ownerItemOf)
	}, nil)
}

// ownerItemOf is what a sweep reads of an owner listed as metadata.
func ownerItemOf(m *metav1.PartialObjectMetadata) *owner.Item {
	it := &owner.Item{}
	md := &it.Metadata
	md.Name, md.Namespace, md.UID, md.DeletionTimestamp = m.Name, m.Namespace, m.UID, m.DeletionTimestamp
	return it
}
