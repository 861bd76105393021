package listpage_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// FuzzDecodePage decodes pages of a NamespaceManager list. Whatever the
// bytes, decoding a page, reading its items' records and parsing them does
// not panic. A page the API server could send (the input with the list's
// and items' metadata made what the API server's typed ObjectMeta and
// ListMeta make of it) decodes, and agrees with the dynamic client's full
// decoding of it on what the sweep keeps: each item's apiVersion, kind,
// name, namespace, uid, resourceVersion, generation, annotations (but
// kubectl's last-applied copy), spec, how it parses and its record in
// either store; and the continue token.
func FuzzDecodePage(f *testing.F) {
	f.Add([]byte(listpagetest.ListPage("next", listpagetest.StoredManager(1))))
	f.Add([]byte(listpagetest.ListPage("")))
	for _, item := range []string{
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"a","namespace":"a","uid":"u-a","generation":3,"resourceVersion":"5",` +
			`"annotations":{"nsman.k8s.consol.de/status":"{\"state\":\"waiting\",\"observedGeneration\":3}","team":"e2e"}},"spec":"delete me","Spec":{"deactivated":true}}`,
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"b","namespace":"b","uid":"u-b","generation":1,"resourceVersion":"6"},` +
			`"spec":{"namespace":"b","policies":[{"name":"p","condition":{"type":"TTL","params":{"ttlSeconds":1.5}},"action":{"type":"DELETE"}},` +
			`{"name":"q","condition":{"type":"TTL","params":{"ttlSeconds":99999999999999999999}},"action":{"type":"WEBHOOK","params":{"url":"http://x","extra":[1,null,{"n":2}]}}}]}}`,
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"c","namespace":"c","uid":"u-c"},"spec":null,"status":"not a record"}`,
		`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"d","namespace":"d","uid":"u-d","annotations":{"x":""}},"status":{"state":7,"claim":{"sweep":"s"}}}`,
		`{"metadata":{"name":"e","Namespace":"e"},"Metadata":{"name":"f"},"spec":{"policies":[{"name":"p p","condition":{"type":"TTL","params":{"ttlSeconds":-0}},"action":{"type":"DELETE"}}]},"status":{"state":"waiting","State":"failed"}}`,
	} {
		f.Add([]byte(listpagetest.ListPage("", item)))
	}
	for _, item := range exampleItems(f) {
		f.Add([]byte(listpagetest.ListPage("", item)))
	}
	f.Add([]byte(`{"kind":"NamespaceManagerList","metadata":{},"items":null}`))
	f.Add([]byte(`{"items":[null,{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if page, err := listpage.DecodePage(data); err == nil {
			for i := range page.Items {
				m := page.Items[i].Listed()
				policy.Parse(m.Obj)
				m.Record(true)
				m.Record(false)
			}
		}
		sent, ok := asSent(data)
		if !ok {
			return
		}
		page, err := listpage.DecodePage(sent)
		if err != nil {
			t.Fatalf("a page the API server could send does not decode: %v\n%s", err, sent)
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, sent)
		if err != nil {
			t.Fatalf("the dynamic client does not decode %s: %v", sent, err)
		}
		list := obj.(*unstructured.UnstructuredList)
		if len(page.Items) != len(list.Items) || page.Metadata.Continue != list.GetContinue() {
			t.Fatalf("%d items, continue %q; the dynamic client: %d, %q", len(page.Items), page.Metadata.Continue, len(list.Items), list.GetContinue())
		}
		for i := range list.Items {
			want, got := &list.Items[i], page.Items[i].Listed()
			agree(t, i, got, want)
		}
	})
}

// agree fails t unless item i as a sweep lists it (got) agrees with the
// dynamic client's decoding of it (want).
func agree(t *testing.T, i int, got listpage.Listed, want *unstructured.Unstructured) {
	t.Helper()
	g := got.Obj
	if g.GetAPIVersion() != want.GetAPIVersion() || g.GetKind() != want.GetKind() || g.GetName() != want.GetName() || g.GetNamespace() != want.GetNamespace() ||
		g.GetUID() != want.GetUID() || g.GetResourceVersion() != want.GetResourceVersion() || g.GetGeneration() != want.GetGeneration() {
		t.Fatalf("item %d: metadata %v, want %v", i, g.Object, want.Object)
	}
	wantAnnotations := want.GetAnnotations()
	maps.DeleteFunc(wantAnnotations, func(k, _ string) bool { return !strings.HasPrefix(k, status.AnnotationPrefix) })
	if ga := g.GetAnnotations(); len(ga)+len(wantAnnotations) > 0 && !reflect.DeepEqual(ga, wantAnnotations) {
		t.Fatalf("item %d: annotations %v, want %v", i, ga, wantAnnotations)
	}
	if !reflect.DeepEqual(g.Object["spec"], want.Object["spec"]) {
		t.Fatalf("item %d: spec %#v, want %#v", i, g.Object["spec"], want.Object["spec"])
	}
	gotM, gotErrs := policy.Parse(g)
	wantM, wantErrs := policy.Parse(want)
	if !reflect.DeepEqual(gotM, wantM) || fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
		t.Fatalf("item %d: parsed\n%+v %v\nwant\n%+v %v", i, gotM, gotErrs, wantM, wantErrs)
	}
	for _, subresource := range []bool{true, false} {
		var raw []byte
		if subresource {
			if status, ok := want.Object["status"]; ok {
				raw, _ = json.Marshal(status)
			}
		} else {
			raw = []byte(wantAnnotations[status.StatusAnnotation])
		}
		var st status.Status
		if len(raw) > 0 && json.Unmarshal(raw, &st) != nil {
			st = status.Status{}
		}
		if read := got.Record(subresource); mustJSON(read) != mustJSON(st) {
			t.Fatalf("item %d, subresource=%v: record read %s, want %s", i, subresource, mustJSON(read), mustJSON(st))
		}
	}
}

// mustJSON is v as JSON.
func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// asSent returns the page the API server would send for data: data
// decoded as JSON, with its metadata and each item's as the API server's
// typed ListMeta and ObjectMeta keep them, apiVersion and kind as it sets
// them. False when data is no such page: not a JSON object, items not a
// list of objects, metadata that does not decode into its type.
func asSent(data []byte) ([]byte, bool) {
	var page map[string]any
	if utiljson.Unmarshal(data, &page) != nil || page == nil {
		return nil, false
	}
	var listMeta metav1.ListMeta
	if !typed(page["metadata"], &listMeta) {
		return nil, false
	}
	items, isList := page["items"].([]any)
	if !isList && page["items"] != nil {
		return nil, false
	}
	if items == nil {
		items = []any{}
	}
	page["apiVersion"], page["kind"], page["metadata"], page["items"] = "k8s.consol.de/v1beta1", "NamespaceManagerList", untyped(listMeta), items
	for _, item := range items {
		obj, isObject := item.(map[string]any)
		var meta metav1.ObjectMeta
		if !isObject || !typed(obj["metadata"], &meta) {
			return nil, false
		}
		obj["apiVersion"], obj["kind"], obj["metadata"] = "k8s.consol.de/v1beta1", "NamespaceManager", untyped(meta)
	}
	sent, err := json.Marshal(page)
	return sent, err == nil
}

// typed decodes v, a decoded JSON value, into out as the API server would.
func typed(v any, out any) bool {
	data, err := json.Marshal(v)
	return err == nil && utiljson.Unmarshal(data, out) == nil
}

// untyped is a typed value as JSON decoded into maps.
func untyped(v any) map[string]any {
	data, _ := json.Marshal(v)
	var m map[string]any
	_ = utiljson.Unmarshal(data, &m)
	return m
}

// exampleItems returns every NamespaceManager of examples/ as the API
// server lists it after kubectl apply: with a uid, a resourceVersion, a
// generation, kubectl's last-applied copy, a hold, and a record.
func exampleItems(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no examples: %v", err)
	}
	var items []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			if obj["kind"] != policy.Kind {
				continue
			}
			manifest, _ := json.Marshal(obj)
			meta := obj["metadata"].(map[string]any)
			meta["uid"], meta["resourceVersion"], meta["generation"] = fmt.Sprintf("uid-%d", len(items)), fmt.Sprint(100+len(items)), 1
			meta["annotations"] = map[string]any{"kubectl.kubernetes.io/last-applied-configuration": string(manifest), status.HoldAnnotation: "2026-01-02T00:00:00Z"}
			obj["status"] = map[string]any{"state": "waiting", "observedGeneration": 1, "message": "TTL 1h0m0s elapses at 2026-01-01T01:00:00Z"}
			item, _ := json.Marshal(obj)
			items = append(items, string(item))
		}
	}
	return items
}
