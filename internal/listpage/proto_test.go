package listpage_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
)

// metadataList is a page of metadata as the API server lists it: labels,
// annotations (one of blob bytes), managed fields, a namespace being deleted,
// a continue token and the items left.
func metadataList(blob int) *metav1.PartialObjectMetadataList {
	created := metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	deleting := metav1.NewTime(created.Add(time.Hour))
	left := int64(4)
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: &left}}
	for i, name := range []string{"team-a", "team-b", "gone"} {
		m := metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("u-" + name), ResourceVersion: string(rune('7' + i)),
			CreationTimestamp: created, Labels: map[string]string{"team": name},
			Annotations: map[string]string{"example.com/blob": strings.Repeat("x", blob), "nsman.k8s.consol.de/hold": "2026-12-01T09:00:00Z"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:team":{}}}}`)}}}
		if name == "gone" {
			m.DeletionTimestamp = &deleting
		}
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: m})
	}
	return list
}

func protobufList(t testing.TB, list *metav1.PartialObjectMetadataList) []byte {
	t.Helper()
	data, err := listpagetest.ProtobufMetadata(list)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeMetadata decodes data with DecodeMetadata, items whole.
func decodeMetadata(data []byte) (metav1.ListMeta, []metav1.PartialObjectMetadata, error) {
	var items []metav1.PartialObjectMetadata
	meta, err := listpage.DecodeMetadata(bytes.NewReader(data), func(m *metav1.PartialObjectMetadata) error {
		items = append(items, *m)
		return nil
	}, func(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata { return m })
	return meta, items, err
}

// The protobuf list the API server sends and its JSON decode alike, item by
// item, and so does the list's metadata.
func TestDecodeMetadataReadsProtobufAsJSON(t *testing.T) {
	list := metadataList(100 << 10)
	asJSON, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"protobuf": protobufList(t, list), "json": asJSON} {
		meta, items, err := decodeMetadata(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !equality.Semantic.DeepEqual(meta, list.ListMeta) {
			t.Errorf("%s: list metadata %+v, want %+v", name, meta, list.ListMeta)
		}
		if len(items) != len(list.Items) {
			t.Fatalf("%s: %d items, want %d", name, len(items), len(list.Items))
		}
		for i := range items {
			if !equality.Semantic.DeepEqual(items[i].ObjectMeta, list.Items[i].ObjectMeta) {
				t.Errorf("%s: item %d read as %+v", name, i, items[i].ObjectMeta.Name)
			}
		}
	}
	empty := protobufList(t, &metav1.PartialObjectMetadataList{})
	if meta, items, err := decodeMetadata(empty); err != nil || len(items) != 0 || meta.Continue != "" {
		t.Errorf("an empty list: %v, %d items, continue %q", err, len(items), meta.Continue)
	}
}

// A body cut anywhere before its list ends is an error, never a shorter
// list: a sweep that read a part of the namespaces as all of them would
// miss holds and records.
func TestDecodeMetadataRefusesACutBody(t *testing.T) {
	data := protobufList(t, metadataList(64))
	for cut := range len(data) {
		meta, items, err := decodeMetadata(data[:cut])
		if err == nil && (len(items) != 3 || meta.Continue != "next") {
			t.Fatalf("cut at %d of %d bytes: %d items, continue %q, no error", cut, len(data), len(items), meta.Continue)
		}
	}
}

// An item longer than any object the API server stores is refused before
// it is read, whatever length the body claims.
func TestDecodeMetadataRefusesAnItemPastTheBound(t *testing.T) {
	field := func(num byte, n uint64) []byte {
		return binary.AppendUvarint([]byte{num<<3 | 2}, n)
	}
	item := field(2, listpage.MaxProtoItem+1)
	data := append([]byte("k8s\x00"), field(2, uint64(len(item))+listpage.MaxProtoItem+1)...)
	data = append(data, item...)
	allocs := testing.AllocsPerRun(5, func() {
		if _, _, err := decodeMetadata(data); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("an item of %d bytes: %v, want it refused", listpage.MaxProtoItem+1, err)
		}
	})
	if allocs > 64 {
		t.Errorf("%v allocations to refuse it", allocs)
	}
}

// FuzzDecodeMetadata decodes lists of metadata, protobuf or JSON. Whatever
// the bytes, decoding does not panic. Of every protobuf list that
// apimachinery's own serializer decodes, DecodeMetadata decodes the list as
// the API server would send it (the serializer's encoding of it) alike,
// item by item.
func FuzzDecodeMetadata(f *testing.F) {
	f.Add(protobufList(f, metadataList(64)))
	f.Add(protobufList(f, &metav1.PartialObjectMetadataList{}))
	asJSON, err := json.Marshal(metadataList(64))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(asJSON)
	f.Add([]byte("k8s\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = decodeMetadata(data)
		want, err := listpagetest.DecodeProtobufMetadata(data)
		if err != nil {
			return
		}
		meta, items, err := decodeMetadata(protobufList(t, want))
		if err != nil {
			t.Fatalf("apimachinery decodes the list, DecodeMetadata does not: %v", err)
		}
		if !equality.Semantic.DeepEqual(meta, want.ListMeta) || !equality.Semantic.DeepEqual(items, want.Items) {
			t.Fatalf("decoded %+v %+v\nwant %+v %+v", meta, items, want.ListMeta, want.Items)
		}
	})
}
