package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// A sweep lists every namespace once, as metadata, and keeps of each what
// namespaceInfoOf reads. Whoever may annotate a namespace can give it 256
// KiB of annotations, and a page holds 500: decoded whole, as client-go's
// metadata client does, a page cost 128 MB. Each namespace is decoded as
// it arrives (listpage.DecodeMetadata), and of its annotations only nsman's are
// kept: the rules' records, which nsman writes, and the hold, the wake, the
// expiry date and the touch, each cut at maxNamespaceValue bytes (a time is
// some 30): a namespace kept for the sweep costs what nsman reads of it.

// maxNamespaceValue bounds the value of a hold, a wake, an expiry date or a
// touch that a sweep keeps; a longer one is cut, does not parse, and is
// reported ignored as any value that does not parse.
const maxNamespaceValue = 256

// namespaceItem is a namespace as a sweep reads it from its list.
type namespaceItem struct {
	Metadata struct {
		Name              string            `json:"name"`
		UID               types.UID         `json:"uid"`
		ResourceVersion   string            `json:"resourceVersion"`
		CreationTimestamp metav1.Time       `json:"creationTimestamp"`
		DeletionTimestamp *metav1.Time      `json:"deletionTimestamp"`
		Labels            map[string]string `json:"labels"`
		Annotations       nsmansAnnotations `json:"annotations"`
	} `json:"metadata"`
}

// nsmansAnnotations are the annotations of a namespace that a sweep reads:
// the others are read past.
type nsmansAnnotations map[string]string

func (a *nsmansAnnotations) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		return nil
	case tok != json.Delim('{'):
		return fmt.Errorf("annotations: %v where an object was expected", tok)
	}
	kept := nsmansAnnotations{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		switch {
		case strings.HasPrefix(key, status.PairAnnotationPrefix):
			var v string
			if err := dec.Decode(&v); err != nil {
				return err
			}
			kept[key] = v
		case key == status.HoldAnnotation || key == status.WakeAnnotation || key == policy.ExpiresAnnotation || key == policy.TouchedAnnotation:
			var v string
			if err := dec.Decode(&v); err != nil {
				return err
			}
			if len(v) > maxNamespaceValue {
				v = v[:maxNamespaceValue]
			}
			kept[key] = v
		default:
			var skipped json.RawMessage
			if err := dec.Decode(&skipped); err != nil {
				return err
			}
		}
	}
	*a = kept
	return nil
}

// metadata is the item as namespaceInfoOf reads it.
func (it *namespaceItem) metadata() *metav1.PartialObjectMetadata {
	m := &it.Metadata
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, Labels: m.Labels, Annotations: m.Annotations}}
}

// namespaceItemOf is what a sweep keeps of a namespace decoded from
// protobuf, whole: nsman's annotations, as nsmansAnnotations keeps them.
func namespaceItemOf(ns *metav1.PartialObjectMetadata) *namespaceItem {
	it := &namespaceItem{}
	m := &it.Metadata
	m.Name, m.UID, m.ResourceVersion, m.CreationTimestamp, m.DeletionTimestamp, m.Labels = ns.Name, ns.UID, ns.ResourceVersion, ns.CreationTimestamp, ns.DeletionTimestamp, ns.Labels
	for key, v := range ns.Annotations {
		switch {
		case strings.HasPrefix(key, status.PairAnnotationPrefix):
		case key == status.HoldAnnotation || key == status.WakeAnnotation || key == policy.ExpiresAnnotation || key == policy.TouchedAnnotation:
			v = v[:min(len(v), maxNamespaceValue)]
		default:
			continue
		}
		if m.Annotations == nil {
			m.Annotations = nsmansAnnotations{}
		}
		m.Annotations[key] = v
	}
	return it
}

// EachNamespace calls fn with every namespace, listed as metadata in pages
// of the sweep's page size, decoded one at a time (see above).
func (rd Reader) EachNamespace(ctx context.Context, fn func(*metav1.PartialObjectMetadata)) error {
	list := func() *rest.Request {
		return rd.RESTClient(corev1.SchemeGroupVersion).Get().Resource("namespaces")
	}
	return eachPage(ctx, asMetadata, rd.PageSize, metav1.ListOptions{}, list, func(body io.Reader) (metav1.ListMeta, error) {
		return listpage.DecodeMetadata(body, func(it *namespaceItem) error {
			fn(it.metadata())
			return nil
		}, namespaceItemOf)
	}, nil)
}
