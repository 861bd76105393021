package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/nsman/nsman/internal/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// A sweep lists NamespaceManagers as JSON and decodes of each only what it
// reads: the dynamic client decodes every field into maps, managed fields
// and kubectl's last-applied copy included, which at 10,000 managers was
// half of a no-op sweep's CPU time (BenchmarkDecodePage).

// Listed is a NamespaceManager as a sweep reads it from its list.
type Listed struct {
	// Obj holds what policy.Parse and the sweep read: apiVersion, kind,
	// name, namespace, uid, resourceVersion, generation, every annotation but
	// kubectl's last-applied copy, and spec, as unstructured content, so
	// that Parse judges whatever the original CRD let through.
	Obj *unstructured.Unstructured
	// Status is the status as stored, decoded by record.StatusLocation.Read
	// only where it is nsman's record.
	Status json.RawMessage
}

// ManagerPage is one page of a NamespaceManager list, decoded no further
// than a sweep needs.
type ManagerPage struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []ListedItem    `json:"items"`
}

type ListedItem struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Metadata is validated by the API server under either CRD, so it
	// decodes into types; fields not named here are skipped unread.
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		UID             types.UID         `json:"uid"`
		ResourceVersion string            `json:"resourceVersion"`
		Generation      int64             `json:"generation"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	// Spec is anything the CRD let through: an object, a list, a string,
	// null. Numbers are kept as int64 where they are integers, as in
	// unstructured content.
	Spec   any             `json:"spec"`
	Status json.RawMessage `json:"status"`
}

// DecodePage decodes a page of a NamespaceManager list held in memory.
func DecodePage(data []byte) (*ManagerPage, error) {
	if len(data) <= wholePage {
		return decodeWhole(data)
	}
	return decodeManagers(bytes.NewReader(data))
}

// decodeManagers decodes a page of a NamespaceManager list, keeping of each
// manager only what listedItem names and, of its annotations, nsman's: a
// tenant can make a manager weigh some 1.5 MiB, most of it annotations and
// managed fields, and a page holds 500. A page of up to wholePage bytes is
// decoded at once, which scans it once less (BenchmarkDecodePage); a
// larger one as it is read, one manager at a time (see decodeStreamed), so
// that it costs the memory of its largest manager. Keys match
// case-sensitively, as the API server's own decoding does.
func decodeManagers(r io.Reader) (*ManagerPage, error) {
	head, err := io.ReadAll(io.LimitReader(r, wholePage+1))
	if err != nil {
		return nil, fmt.Errorf("read a page of NamespaceManagers: %w", err)
	}
	if len(head) <= wholePage {
		return decodeWhole(head)
	}
	page := &ManagerPage{}
	meta, err := DecodeStreamed(io.MultiReader(bytes.NewReader(head), r), func(it *caseSensitiveItem) error {
		onlyNsmans(it.Metadata.Annotations)
		page.Items = append(page.Items, ListedItem(*it))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode a page of NamespaceManagers: %w", err)
	}
	page.Metadata = meta
	return page, nil
}

// decodeWhole decodes a page of managers at once.
func decodeWhole(data []byte) (*ManagerPage, error) {
	page := &ManagerPage{}
	if err := utiljson.Unmarshal(data, page); err != nil {
		return nil, fmt.Errorf("decode a page of NamespaceManagers: %w", err)
	}
	for i := range page.Items {
		onlyNsmans(page.Items[i].Metadata.Annotations)
	}
	return page, nil
}

// wholePage is the size up to which a page of managers is decoded at once.
const wholePage = 8 << 20

// onlyNsmans removes from a manager's annotations all but nsman's.
func onlyNsmans(annotations map[string]string) {
	maps.DeleteFunc(annotations, func(k, _ string) bool { return !strings.HasPrefix(k, status.AnnotationPrefix) })
}

// caseSensitiveItem is a listedItem decoded as the API server decodes:
// keys matched case-sensitively, from the decoder's buffer, uncopied.
type caseSensitiveItem ListedItem

func (it *caseSensitiveItem) UnmarshalJSON(data []byte) error {
	return utiljson.Unmarshal(data, (*ListedItem)(it))
}

// A page and its items are runtime.Objects for the pager, which reads the
// page's continue token and hands on its items; nothing copies them.
func (p *ManagerPage) GetObjectKind() schema.ObjectKind  { return schema.EmptyObjectKind }
func (p *ManagerPage) DeepCopyObject() runtime.Object    { c := *p; return &c }
func (p *ManagerPage) GetListMeta() metav1.ListInterface { return &p.Metadata }
func (it *ListedItem) GetObjectKind() schema.ObjectKind  { return schema.EmptyObjectKind }
func (it *ListedItem) DeepCopyObject() runtime.Object    { c := *it; return &c }

// Listed is the item as the sweep reads it.
func (it *ListedItem) Listed() Listed {
	meta := map[string]any{
		"name":            it.Metadata.Name,
		"namespace":       it.Metadata.Namespace,
		"uid":             string(it.Metadata.UID),
		"resourceVersion": it.Metadata.ResourceVersion,
		"generation":      it.Metadata.Generation,
	}
	annotations := make(map[string]any, len(it.Metadata.Annotations))
	for k, v := range it.Metadata.Annotations {
		annotations[k] = v
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": it.APIVersion, "kind": it.Kind, "metadata": meta}
	if it.Spec != nil {
		obj["spec"] = it.Spec
	}
	return Listed{Obj: &unstructured.Unstructured{Object: obj}, Status: it.Status}
}

// EachManager calls fn with every NamespaceManager the sweep selects (with
// all, of the whole cluster), in list order, with EachItem; once ctx is
// done it finishes the page in hand. A page refused 410 with a continue
// token (the list's snapshot was compacted away between two pages) is
// fetched with that token, at most maxExpiredContinues times: it resumes
// after the last manager listed from a newer snapshot, where one created or
// deleted since may be missed but none is listed twice.
func (rd Reader) EachManager(ctx context.Context, all bool, fn func(Listed)) error {
	return rd.EachManagerPaged(ctx, all, nil, fn)
}

// EachManagerPaged is EachManager, calling onPage (when set) with each page
// before fn with any of its managers.
func (rd Reader) EachManagerPaged(ctx context.Context, all bool, onPage func(*ManagerPage), fn func(Listed)) error {
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
	return EachItem(ctx, rd.PageSize, opts, page, func(it *ListedItem) { fn(it.Listed()) })
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
func (rd Reader) ManagerNow(ctx context.Context, obj *unstructured.Unstructured) (Listed, error) {
	page, err := rd.listPage(ctx, obj.GetNamespace(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()})
	if err == nil && len(page.Items) == 0 {
		err = apierrors.NewNotFound(ManagerResource.GroupResource(), obj.GetName())
	}
	if err != nil {
		return Listed{}, err
	}
	return page.Items[0].Listed(), nil
}

// listPage fetches and decodes one page of NamespaceManagers.
func (rd Reader) listPage(ctx context.Context, namespace string, opts metav1.ListOptions) (*ManagerPage, error) {
	result := rd.Clients.Managers.Get().
		NamespaceIfScoped(namespace, namespace != "").
		Resource(ManagerResource.Resource).
		SpecificallyVersionedParams(&opts, scheme.ParameterCodec, metav1.Unversioned)
	body, err := result.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return decodeManagers(body)
}

// EachStreamed calls fn with every item of the list that request makes for
// opts, in pages of pageSize, decoding the response as it arrives, one item
// at a time, into a T: a page costs the memory of its largest item (at most
// the API server's object limit, about 1.5 MiB), not of all its items, and
// of an item only the fields T names are kept. It is for lists of objects a
// tenant writes whole, where a page of 500 decoded at once could take
// gigabytes. An error from fn ends the listing with that error.
func EachStreamed[T any](ctx context.Context, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, fn func(*T) error) error {
	return eachStreamedAs(ctx, "application/json", pageSize, opts, request, fn)
}

// asMetadata asks the API server for a list of metadata only
// (PartialObjectMetadataList), as client-go's metadata client does.
const asMetadata = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// ObjectMeta is what a sweep reads of an object listed as metadata (see
// eachMetadata): annotations and managed fields, the bulk of it, are
// skipped.
type ObjectMeta struct {
	Metadata struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		CreationTimestamp metav1.Time       `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels"`
	} `json:"metadata"`
}

// EachMetadata is eachStreamed over the metadata of the objects listed,
// for objects a tenant writes: each one's annotations (up to 256 KiB) are
// read past, not kept, and a page of 500 costs one object's metadata.
func EachMetadata(ctx context.Context, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, fn func(*ObjectMeta) error) error {
	return eachStreamedAs(ctx, asMetadata, pageSize, opts, request, fn)
}

func eachStreamedAs[T any](ctx context.Context, accept string, pageSize int64, opts metav1.ListOptions, request func() *rest.Request, fn func(*T) error) error {
	opts.Limit = pageSize
	for {
		body, err := request().
			SpecificallyVersionedParams(&opts, scheme.ParameterCodec, metav1.Unversioned).
			SetHeader("Accept", accept).
			Stream(ctx)
		if err != nil {
			return err
		}
		meta, err := DecodeStreamed(body, fn)
		body.Close()
		if err != nil || meta.Continue == "" {
			return err
		}
		opts.Continue = meta.Continue
	}
}

// DecodeStreamed decodes a list from r, calling fn with each item, and
// returns the list's metadata. Keys match case-sensitively.
func DecodeStreamed[T any](r io.Reader, fn func(*T) error) (metav1.ListMeta, error) {
	dec := json.NewDecoder(r)
	var meta metav1.ListMeta
	tok, err := dec.Token()
	switch {
	case err != nil:
		return meta, fmt.Errorf("decode a list: %w", err)
	case tok == nil: // null: no list, no items
		return meta, expectEOF(dec)
	case tok != json.Delim('{'):
		return meta, fmt.Errorf("decode a list: %v where an object was expected", tok)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return meta, fmt.Errorf("decode a list: %w", err)
		}
		switch key {
		case "metadata":
			err = dec.Decode(&meta)
		case "items":
			err = decodeItems(dec, fn)
		default:
			var skipped json.RawMessage
			err = dec.Decode(&skipped)
		}
		if err != nil {
			return meta, fmt.Errorf("decode a list: %w", err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return meta, fmt.Errorf("decode a list: %w", err)
	}
	return meta, expectEOF(dec)
}

// expectEOF fails unless dec has nothing more than white space to read.
func expectEOF(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("decode a list: data after the list (%v)", err)
	}
	return nil
}

// decodeItems decodes a list's items, an array or null, calling fn with
// each.
func decodeItems[T any](dec *json.Decoder, fn func(*T) error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items: %v where an array was expected", tok)
	}
	for dec.More() {
		var item T
		if err := dec.Decode(&item); err != nil {
			return err
		}
		if err := fn(&item); err != nil {
			return err
		}
	}
	_, err = dec.Token() // ']'
	return err
}
