package record

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// unstructuredItems decodes a page as the dynamic client does.
func unstructuredItems(t testing.TB, page string) []unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*unstructured.UnstructuredList).Items
}

func TestDecodePageKeepsWhatTheSweepReads(t *testing.T) {
	page, err := listpage.DecodePage([]byte(listpagetest.ListPage("next", listpagetest.StoredManager(7))))
	if err != nil {
		t.Fatal(err)
	}
	if page.Metadata.Continue != "next" || len(page.Items) != 1 {
		t.Fatalf("continue %q, %d items", page.Metadata.Continue, len(page.Items))
	}
	m := page.Items[0].Listed()
	want := map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata": map[string]any{
			"name": "team-00007", "namespace": "team-00007", "uid": "00000000-0000-0000-0000-000000000007",
			"resourceVersion": "1007", "generation": int64(1),
		},
		"spec": map[string]any{"policies": []any{map[string]any{
			"name":      "delete when the e2e pods pass",
			"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"initialDelaySeconds": int64(30), "podLabels": map[string]any{"role": "e2e-test"}}},
			"action":    map[string]any{"type": "DELETE"},
		}}},
	}
	if !reflect.DeepEqual(m.Obj.Object, want) {
		t.Errorf("decoded\n%#v\nwant\n%#v", m.Obj.Object, want)
	}
	st := StatusLocation{Subresource: true}.Read(m)
	if st.State != report.StateWaiting || st.Target != "team-00007" || st.ObservedGeneration != 1 || len(st.Conditions) != 1 {
		t.Errorf("status read as %+v", st)
	}
}

// Whatever the original CRD let through, a decoded manager parses as the
// dynamic client's decoding of it does, and its record reads the same.
func TestDecodePageAgreesWithTheDynamicClient(t *testing.T) {
	items := []string{
		listpagetest.StoredManager(1),
		// Under the original CRD: a spec of the wrong type, a key that
		// differs from spec in case only, a float where an integer belongs,
		// the record in an annotation, no status.
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"a","namespace":"a","uid":"u-a","generation":3,"resourceVersion":"5",` +
			`"annotations":{"nsman.k8s.consol.de/status":"{\"state\":\"waiting\",\"observedGeneration\":3}","team":"e2e"}},"spec":"delete me","Spec":{"deactivated":true}}`,
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"b","namespace":"b","uid":"u-b","generation":1,"resourceVersion":"6"},` +
			`"spec":{"namespace":"b","policies":[{"name":"p","condition":{"type":"TTL","params":{"ttlSeconds":1.5}},"action":{"type":"DELETE"}},` +
			`{"name":"q","condition":{"type":"TTL","params":{"ttlSeconds":99999999999999999999}},"action":{"type":"WEBHOOK","params":{"url":"http://x","extra":[1,null,{"n":2}]}}}]}}`,
		// A null spec, and none at all.
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"c","namespace":"c","uid":"u-c"},"spec":null,"status":"not a record"}`,
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"d","namespace":"d","uid":"u-d"}}`,
	}
	data := listpagetest.ListPage("", items...)
	page, err := listpage.DecodePage([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range unstructuredItems(t, data) {
		got := page.Items[i].Listed()
		wantM, wantErrs := policy.Parse(&u)
		gotM, gotErrs := policy.Parse(got.Obj)
		if !reflect.DeepEqual(gotM, wantM) || fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
			t.Errorf("item %d: parsed\n%+v %v\nwant\n%+v %v", i, gotM, gotErrs, wantM, wantErrs)
		}
		if got.Obj.GetAPIVersion() != u.GetAPIVersion() || got.Obj.GetKind() != u.GetKind() || got.Obj.GetResourceVersion() != u.GetResourceVersion() {
			t.Errorf("item %d: %s %s %s, want %s %s %s", i, got.Obj.GetAPIVersion(), got.Obj.GetKind(), got.Obj.GetResourceVersion(),
				u.GetAPIVersion(), u.GetKind(), u.GetResourceVersion())
		}
		wantAnnotations := u.GetAnnotations()
		maps.DeleteFunc(wantAnnotations, func(k, _ string) bool { return !strings.HasPrefix(k, status.AnnotationPrefix) })
		if got := got.Obj.GetAnnotations(); len(got)+len(wantAnnotations) > 0 && !reflect.DeepEqual(got, wantAnnotations) {
			t.Errorf("item %d: annotations %v, want %v", i, got, wantAnnotations)
		}
		for _, store := range []StatusLocation{{Subresource: true}, {Subresource: false}} {
			var want status.Status
			if store.Subresource {
				if raw, ok := u.Object["status"].(map[string]any); ok {
					data, _ := json.Marshal(raw)
					_ = json.Unmarshal(data, &want)
				}
			} else if raw, ok := wantAnnotations[status.StatusAnnotation]; ok {
				_ = json.Unmarshal([]byte(raw), &want)
			}
			if got := store.Read(got); write.MustJSON(got) != write.MustJSON(want) {
				t.Errorf("item %d, subresource=%v: read %s, want %s", i, store.Subresource, write.MustJSON(got), write.MustJSON(want))
			}
		}
	}
}
