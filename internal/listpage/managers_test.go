package listpage_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/status"
)

func TestDecodePageRejectsWhatIsNotAList(t *testing.T) {
	for _, data := range []string{`<html>`, `{"items":{}}`, `{"items":[{"metadata":{"generation":"one"}}]}`} {
		if _, err := listpage.DecodePage([]byte(data)); err == nil {
			t.Errorf("%s: decoded", data)
		}
	}
}

// A page larger than listpage.WholePage is decoded as it is read, to the same
// managers as a page decoded at once, each keeping nsman's annotations
// only; a cut-off or trailing page fails either way.
func TestDecodeLargePage(t *testing.T) {
	padding := strings.Repeat("p", 240<<10)
	var items []string
	for i := range listpage.WholePage/len(padding) + 4 {
		item := strings.Replace(listpagetest.StoredManager(i), `"annotations":{`, `"annotations":{"padding":"`+padding+`","`+status.HoldAnnotation+`":"2026-12-01T00:00:00Z",`, 1)
		items = append(items, item)
	}
	data := listpagetest.ListPage("next", items...)
	if len(data) <= listpage.WholePage {
		t.Fatalf("a page of %d bytes, want more than %d", len(data), listpage.WholePage)
	}
	large, err := listpage.DecodePage([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(large.Items) != len(items) || large.Metadata.Continue != "next" {
		t.Fatalf("%d items, continue %q; want %d, next", len(large.Items), large.Metadata.Continue, len(items))
	}
	for i, item := range items {
		small, err := listpage.DecodePage([]byte(listpagetest.ListPage("", item)))
		if err != nil {
			t.Fatal(err)
		}
		got, want := large.Items[i].Listed(), small.Items[0].Listed()
		if !reflect.DeepEqual(got.Obj.Object, want.Obj.Object) || string(got.Status) != string(want.Status) {
			t.Fatalf("item %d of the large page: %v, want %v", i, got.Obj.Object, want.Obj.Object)
		}
		if a := got.Obj.GetAnnotations(); len(a) != 1 || a[status.HoldAnnotation] == "" {
			t.Errorf("item %d: annotations %v, want nsman's hold alone", i, a)
		}
	}
	for _, bad := range []string{data[:len(data)-1], data + "{}"} {
		if _, err := listpage.DecodePage([]byte(bad)); err == nil {
			t.Errorf("a page of %d bytes cut off, or with data after it, decoded", len(bad))
		}
	}
}

// A streamed list's keys match case-sensitively, as the API server's own
// decoding does: a custom resource that keeps unknown fields could carry
// "Replicas" beside "replicas", and the sweep must read the one the API
// server reads (and scales), not the one a tenant wrote last.
func TestDecodeStreamedMatchesKeysCaseSensitively(t *testing.T) {
	type item struct {
		Spec struct {
			Replicas *int64 `json:"replicas"`
		} `json:"spec"`
	}
	var got []string
	_, err := listpage.DecodeStreamed(strings.NewReader(`{"metadata":{"continue":"c"},"items":[{"spec":{"replicas":3,"Replicas":0}},{"Spec":{"replicas":0}},{"spec":{"REPLICAS":0}}]}`), func(it *item) error {
		if it.Spec.Replicas == nil {
			got = append(got, "none")
		} else {
			got = append(got, fmt.Sprint(*it.Spec.Replicas))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"3", "none", "none"}; !slices.Equal(got, want) {
		t.Errorf("replicas read %q, want %q: keys matched in another case", got, want)
	}
}
