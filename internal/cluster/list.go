package cluster

import (
	"context"
	"errors"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/listpage"
)

// EachManager calls fn with every NamespaceManager the sweep selects (with
// all, of the whole cluster), in list order, with EachItem; once ctx is
// done it finishes the page in hand. A page refused 410 with a continue
// token (the list's snapshot was compacted away between two pages) is
// fetched with that token, at most maxExpiredContinues times: it resumes
// after the last manager listed from a newer snapshot, where one created or
// deleted since may be missed but none is listed twice.
func (rd Reader) EachManager(ctx context.Context, all bool, fn func(listpage.Listed)) error {
	return rd.EachManagerPaged(ctx, all, nil, fn)
}

// EachManagerPaged is EachManager, calling onPage (when set) with each page
// before fn with any of its managers.
func (rd Reader) EachManagerPaged(ctx context.Context, all bool, onPage func(*listpage.ManagerPage), fn func(listpage.Listed)) error {
	opts := metav1.ListOptions{LabelSelector: rd.LabelSelector}
	namespace := rd.Namespace
	if all {
		opts.LabelSelector, namespace = "", ""
	}
	expired := 0
	page := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		for {
			page, err := rd.listPage(ctx, namespace, opts)
			if err == nil && onPage != nil {
				onPage(page)
			}
			next, resume := continueAfterExpiry(err)
			if !resume || opts.Continue == "" || expired >= maxExpiredContinues {
				return page, err
			}
			expired++
			rd.Log.Warn("continue token expired; listing the rest from a newer snapshot", "error", err.Error())
			opts.Continue = next
		}
	}
	return EachItem(ctx, rd.PageSize, opts, page, func(it *listpage.ListedItem) { fn(it.Listed()) })
}

// maxExpiredContinues bounds how often one sweep resumes a listing past an
// expired continue token.
const maxExpiredContinues = 3

// continueAfterExpiry returns the continue token that a 410 answer to a
// page request carries, with which the listing resumes where it stopped.
func continueAfterExpiry(err error) (string, bool) {
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		return "", false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Continue == "" {
		return "", false
	}
	return status.Status().Continue, true
}

// ManagerNow reads manager obj again with a list by name: nsman may list
// managers, not get them.
func (rd Reader) ManagerNow(ctx context.Context, obj *unstructured.Unstructured) (listpage.Listed, error) {
	page, err := rd.listPage(ctx, obj.GetNamespace(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()})
	if err == nil && len(page.Items) == 0 {
		err = apierrors.NewNotFound(ManagerResource.GroupResource(), obj.GetName())
	}
	if err != nil {
		return listpage.Listed{}, err
	}
	return page.Items[0].Listed(), nil
}

// listPage fetches and decodes one page of NamespaceManagers.
func (rd Reader) listPage(ctx context.Context, namespace string, opts metav1.ListOptions) (*listpage.ManagerPage, error) {
	result := rd.Clients.Managers.Get().
		NamespaceIfScoped(namespace, namespace != "").
		Resource(ManagerResource.Resource).
		SpecificallyVersionedParams(&opts, scheme.ParameterCodec, metav1.Unversioned)
	body, err := result.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return listpage.DecodeManagers(body)
}

// EachStreamed calls fn with every item of the list that request makes for
// opts, in pages of pageSize, decoding the response as it arrives, one item
// at a time, into a T: a page costs the memory of its largest item (at most
// the API server's object limit, about 1.5 MiB), not of all its items, and
// of an item only the fields T names are kept. It is for lists of objects a
// tenant writes whole, where a page of 500 decoded at once could take
// gigabytes. An error from fn ends the listing with that error.
func EachStreamed[T any](ctx context.Context, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, fn func(*T) error) error {
	return eachPage(ctx, "application/json", pageSize, opts, request, streamed(fn), nil)
}

// EachStreamedPaged is EachStreamed, calling endPage after each page once
// its response is read and closed: a caller that acts on what a page held
// acts with no response open. An error from endPage ends the listing.
func EachStreamedPaged[T any](ctx context.Context, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, fn func(*T) error, endPage func() error) error {
	return eachPage(ctx, "application/json", pageSize, opts, request, streamed(fn), endPage)
}

// streamed decodes a JSON page with listpage.DecodeStreamed.
func streamed[T any](fn func(*T) error) func(io.Reader) (metav1.ListMeta, error) {
	return func(body io.Reader) (metav1.ListMeta, error) { return listpage.DecodeStreamed(body, fn) }
}

// asMetadata asks the API server for a list of metadata only
// (PartialObjectMetadataList), protobuf first, as client-go's metadata
// client does; JSON where protobuf is not served (see
// listpage.DecodeMetadata).
const asMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// ObjectMeta is what a sweep reads of an object listed as metadata (see
// EachMetadata): annotations and managed fields, the bulk of it, are not
// kept.
type ObjectMeta struct {
	Metadata struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		CreationTimestamp metav1.Time       `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels"`
	} `json:"metadata"`
}

// objectMetaOf is what a sweep reads of item.
func objectMetaOf(item *metav1.PartialObjectMetadata) *ObjectMeta {
	o := &ObjectMeta{}
	m := &o.Metadata
	m.Name, m.Namespace, m.CreationTimestamp, m.Labels = item.Name, item.Namespace, item.CreationTimestamp, item.Labels
	return o
}

// EachMetadata is EachStreamed over the metadata of the objects listed,
// for objects a tenant writes: each one's annotations (up to 256 KiB) are
// dropped once read, and a page of 500 costs one object's metadata.
func EachMetadata(ctx context.Context, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, fn func(*ObjectMeta) error) error {
	return eachPage(ctx, asMetadata, pageSize, opts, request, func(body io.Reader) (metav1.ListMeta, error) {
		return listpage.DecodeMetadata(body, fn, objectMetaOf)
	}, nil)
}

// eachPage requests the pages of a list, accepting accept, and decodes
// each with decode as it arrives; endPage, when set, is called after each.
func eachPage(ctx context.Context, accept string, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, decode func(io.Reader) (metav1.ListMeta, error), endPage func() error) error {
	opts.Limit = pageSize
	for {
		body, err := request().
			SpecificallyVersionedParams(&opts, scheme.ParameterCodec, metav1.Unversioned).
			SetHeader("Accept", accept).
			Stream(ctx)
		if err != nil {
			return err
		}
		meta, err := decode(body)
		body.Close()
		if err == nil && endPage != nil {
			err = endPage()
		}
		if err != nil || meta.Continue == "" {
			return err
		}
		opts.Continue = meta.Continue
	}
}
