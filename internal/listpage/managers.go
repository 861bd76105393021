// Package listpage decodes what a list request answers, no further than a
// sweep reads: a page of NamespaceManagers, of each manager only the
// fields the sweep reads and of its annotations only nsman's, and any list
// streamed one item at a time. It needs no client: package cluster makes
// the requests.
package listpage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/nsman/nsman/internal/status"
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
	// Status is the status as stored, decoded by Record only where it is
	// nsman's record.
	Status json.RawMessage
}

// Record decodes the manager's record: its status (subresource), else
// status.StatusAnnotation, where the original operator's CRD keeps it. A
// record that does not decode (edited by hand, say) counts as absent.
func (m Listed) Record(subresource bool) status.Status {
	raw := []byte(m.Status)
	if !subresource {
		raw = []byte(m.Obj.GetAnnotations()[status.StatusAnnotation])
	}
	var st status.Status
	if len(raw) > 0 && json.Unmarshal(raw, &st) != nil {
		return status.Status{}
	}
	return st
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
	return DecodeManagers(bytes.NewReader(data))
}

// DecodeManagers decodes a page of a NamespaceManager list, keeping of each
// manager only what ListedItem names and, of its annotations, nsman's: a
// tenant can make a manager weigh some 1.5 MiB, most of it annotations and
// managed fields, and a page holds 500. A page of up to wholePage bytes is
// decoded at once, which scans it once less (BenchmarkDecodePage); a
// larger one as it is read, one manager at a time (see DecodeStreamed), so
// that it costs the memory of its largest manager. Keys match
// case-sensitively, as the API server's own decoding does.
func DecodeManagers(r io.Reader) (*ManagerPage, error) {
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

// caseSensitiveItem is a ListedItem decoded as the API server decodes:
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
