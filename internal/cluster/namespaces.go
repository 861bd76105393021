package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/owner"
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
// some 30), the owner markers, cut at owner.MaxMarker+1, and the notify
// channel, cut at maxNotifyChannel: a namespace
// kept for the sweep costs what nsman reads of it.

// maxNamespaceValue bounds the value of a hold, a wake, an expiry date or a
// touch that a sweep keeps; a longer one is cut, does not parse, and is
// reported ignored as any value that does not parse.
const maxNamespaceValue = 256

// maxNotifyChannel bounds the notify channel a sweep keeps: one byte more
// than a channel's name (a DNS label) may have, so that a longer value is
// kept cut, and names no channel.
const maxNotifyChannel = 64

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

// keptAnnotation reports whether a sweep keeps a namespace's annotation
// key, and the bytes of its value it keeps (0: all): the rules' records
// whole, a hold, wake, expiry date or touch cut at maxNamespaceValue, an
// owner marker (owner.Annotations) at owner.MaxMarker+1, so that one cut
// is longer than any that parses, a notify channel at
// maxNotifyChannel. Both decodings of a list ask it.
func keptAnnotation(key string) (bound int, keep bool) {
	switch {
	case strings.HasPrefix(key, status.PairAnnotationPrefix):
		return 0, true
	case key == status.HoldAnnotation || key == status.WakeAnnotation || key == policy.ExpiresAnnotation || key == policy.TouchedAnnotation:
		return maxNamespaceValue, true
	case slices.Contains(ownerAnnotations, key):
		return owner.MaxMarker + 1, true
	case key == status.NotifyChannelAnnotation:
		return maxNotifyChannel, true
	}
	return 0, false
}

// ownerAnnotations are the owner markers' annotations.
var ownerAnnotations = owner.Annotations()

// cut is v cut at bound bytes (0: not cut).
func cut(v string, bound int) string {
	if bound > 0 && len(v) > bound {
		return v[:bound]
	}
	return v
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
		bound, keep := keptAnnotation(key)
		if !keep {
			var skipped json.RawMessage
			if err := dec.Decode(&skipped); err != nil {
				return err
			}
			continue
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return err
		}
		kept[key] = cut(v, bound)
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
		bound, keep := keptAnnotation(key)
		if !keep {
			continue
		}
		v = cut(v, bound)
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
