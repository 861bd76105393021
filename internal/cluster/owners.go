package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	list := func() *rest.Request {
		return rd.Clients.Kube.Discovery().RESTClient().Get().AbsPath(ownerPath(resource)...)
	}
	if spec {
		return EachStreamed(ctx, rd.PageSize, metav1.ListOptions{}, list, fn)
	}
	return eachPage(ctx, asMetadata, rd.PageSize, metav1.ListOptions{}, list, func(body io.Reader) (metav1.ListMeta, error) {
		return listpage.DecodeMetadata(body, fn, ownerItemOf)
	}, nil)
}

// ownerPath is the path of resource's objects: cluster-wide, or of one
// namespace's.
func ownerPath(resource schema.GroupVersionResource, namespace ...string) []string {
	path := []string{"/apis", resource.Group, resource.Version}
	if resource.Group == "" {
		path = []string{"/api", resource.Version}
	}
	if len(namespace) > 0 {
		path = append(path, "namespaces", namespace[0])
	}
	return append(path, resource.Resource)
}

// OwnerExists reads object namespace/name of resource again, as metadata:
// whether it exists (being deleted, it does). An object not found is not:
// the API server's 404 names it. A resource that is not served (its CRD
// removed since), whose 404 names no object, is an error. Of an object
// found, nothing is read: its metadata is what a tenant may pad.
func (rd Reader) OwnerExists(ctx context.Context, resource schema.GroupVersionResource, namespace, name string) (bool, error) {
	body, err := rd.Clients.Kube.Discovery().RESTClient().Get().AbsPath(append(ownerPath(resource, namespace), name)...).
		SetHeader("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").Stream(ctx)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		_ = body.Close()
		return true, nil
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Name == name:
		return false, nil
	}
	return false, fmt.Errorf("read %s %s/%s: %w", resource.GroupResource(), namespace, name, err)
}

// OwnerNow reads object namespace/name of resource again by name, decoded
// as it arrives into owner.Item's fields (the rest, a tenant's to fill up
// to the API server's limit, is read past): nil, with no error, when the
// API server's 404 names it. A resource not served is an error.
func (rd Reader) OwnerNow(ctx context.Context, resource schema.GroupVersionResource, namespace, name string) (*owner.Item, error) {
	body, err := rd.Clients.Kube.Discovery().RESTClient().Get().AbsPath(append(ownerPath(resource, namespace), name)...).
		SetHeader("Accept", "application/json").Stream(ctx)
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Name == name:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s %s/%s: %w", resource.GroupResource(), namespace, name, err)
	}
	defer body.Close()
	it := &owner.Item{}
	if err := json.NewDecoder(body).Decode(it); err != nil {
		return nil, fmt.Errorf("read %s %s/%s: %w", resource.GroupResource(), namespace, name, err)
	}
	return it, nil
}

// ownerItemOf is what a sweep reads of an owner listed as metadata.
func ownerItemOf(m *metav1.PartialObjectMetadata) *owner.Item {
	it := &owner.Item{}
	md := &it.Metadata
	md.Name, md.Namespace, md.UID, md.DeletionTimestamp = m.Name, m.Namespace, m.UID, m.DeletionTimestamp
	return it
}
