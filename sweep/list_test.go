package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// storedManager is NamespaceManager i as the API server lists it after
// kubectl apply and a sweep: managed fields of both, kubectl's last-applied
// copy, a spec and a status.
func storedManager(i int) string {
	name := fmt.Sprintf("team-%05d", i)
	return `{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{` +
		`"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"k8s.consol.de/v1beta1\",\"kind\":\"NamespaceManager\",\"metadata\":{\"annotations\":{},\"name\":\"` + name + `\",\"namespace\":\"` + name + `\"},\"spec\":{\"policies\":[{\"action\":{\"type\":\"DELETE\"},\"condition\":{\"params\":{\"initialDelaySeconds\":30,\"podLabels\":{\"role\":\"e2e-test\"}},\"type\":\"PODS_SUCCEED\"},\"name\":\"delete when the e2e pods pass\"}]}}\n"},` +
		`"creationTimestamp":"2026-11-22T18:06:55Z","generation":1,"labels":{"team":"e2e"},` +
		`"managedFields":[{"apiVersion":"k8s.consol.de/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:team":{}}},"f:spec":{".":{},"f:policies":{}}},"manager":"kubectl-client-side-apply","operation":"Update","time":"2026-11-22T18:06:55Z"},` +
		`{"apiVersion":"k8s.consol.de/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Fired\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:message":{},"f:observedGeneration":{},"f:state":{},"f:target":{}}},"manager":"nsman","operation":"Update","subresource":"status","time":"2026-11-22T18:06:58Z"}],` +
		`"name":"` + name + `","namespace":"` + name + `","resourceVersion":"` + fmt.Sprint(1000+i) + `","uid":"00000000-0000-0000-0000-` + fmt.Sprintf("%012d", i) + `"},` +
		`"spec":{"policies":[{"action":{"type":"DELETE"},"condition":{"params":{"initialDelaySeconds":30,"podLabels":{"role":"e2e-test"}},"type":"PODS_SUCCEED"},"name":"delete when the e2e pods pass"}]},` +
		`"status":{"conditions":[{"lastTransitionTime":"2026-11-22T18:06:58Z","message":"not every pod matching role=e2e-test Succeeded: pod e2e has not succeeded","observedGeneration":1,"reason":"Waiting","status":"False","type":"Fired"}],` +
		`"message":"not every pod matching role=e2e-test Succeeded: pod e2e has not succeeded","observedGeneration":1,"state":"waiting","target":"` + name + `"}}`
}

// listPage is a page of a NamespaceManager list holding items.
func listPage(continueToken string, items ...string) string {
	return `{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManagerList","metadata":{"continue":"` + continueToken +
		`","resourceVersion":"99"},"items":[` + strings.Join(items, ",") + `]}`
}

// listedOf is obj as a sweep lists it: obj in a page of its own, decoded.
func listedOf(t testing.TB, obj *unstructured.Unstructured) listed {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	page, err := decodePage([]byte(listPage("", string(data))))
	if err != nil {
		t.Fatal(err)
	}
	return page.Items[0].listed()
}

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
	page, err := decodePage([]byte(listPage("next", storedManager(7))))
	if err != nil {
		t.Fatal(err)
	}
	if page.Metadata.Continue != "next" || len(page.Items) != 1 {
		t.Fatalf("continue %q, %d items", page.Metadata.Continue, len(page.Items))
	}
	m := page.Items[0].listed()
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
	if !reflect.DeepEqual(m.obj.Object, want) {
		t.Errorf("decoded\n%#v\nwant\n%#v", m.obj.Object, want)
	}
	st := statusLocation{subresource: true}.read(m)
	if st.State != report.StateWaiting || st.Target != "team-00007" || st.ObservedGeneration != 1 || len(st.Conditions) != 1 {
		t.Errorf("status read as %+v", st)
	}
}

// Whatever the original CRD let through, a decoded manager parses as the
// dynamic client's decoding of it does, and its record reads the same.
func TestDecodePageAgreesWithTheDynamicClient(t *testing.T) {
	items := []string{
		storedManager(1),
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
	data := listPage("", items...)
	page, err := decodePage([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range unstructuredItems(t, data) {
		got := page.Items[i].listed()
		wantM, wantErrs := policy.Parse(&u)
		gotM, gotErrs := policy.Parse(got.obj)
		if !reflect.DeepEqual(gotM, wantM) || fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
			t.Errorf("item %d: parsed\n%+v %v\nwant\n%+v %v", i, gotM, gotErrs, wantM, wantErrs)
		}
		if got.obj.GetAPIVersion() != u.GetAPIVersion() || got.obj.GetKind() != u.GetKind() || got.obj.GetResourceVersion() != u.GetResourceVersion() {
			t.Errorf("item %d: %s %s %s, want %s %s %s", i, got.obj.GetAPIVersion(), got.obj.GetKind(), got.obj.GetResourceVersion(),
				u.GetAPIVersion(), u.GetKind(), u.GetResourceVersion())
		}
		wantAnnotations := u.GetAnnotations()
		maps.DeleteFunc(wantAnnotations, func(k, _ string) bool { return !strings.HasPrefix(k, status.AnnotationPrefix) })
		if got := got.obj.GetAnnotations(); len(got)+len(wantAnnotations) > 0 && !reflect.DeepEqual(got, wantAnnotations) {
			t.Errorf("item %d: annotations %v, want %v", i, got, wantAnnotations)
		}
		for _, store := range []statusLocation{{subresource: true}, {subresource: false}} {
			var want status.Status
			if store.subresource {
				if raw, ok := u.Object["status"].(map[string]any); ok {
					data, _ := json.Marshal(raw)
					_ = json.Unmarshal(data, &want)
				}
			} else if raw, ok := wantAnnotations[status.StatusAnnotation]; ok {
				_ = json.Unmarshal([]byte(raw), &want)
			}
			if got := store.read(got); write.MustJSON(got) != write.MustJSON(want) {
				t.Errorf("item %d, subresource=%v: read %s, want %s", i, store.subresource, write.MustJSON(got), write.MustJSON(want))
			}
		}
	}
}

func TestDecodePageRejectsWhatIsNotAList(t *testing.T) {
	for _, data := range []string{`<html>`, `{"items":{}}`, `{"items":[{"metadata":{"generation":"one"}}]}`} {
		if _, err := decodePage([]byte(data)); err == nil {
			t.Errorf("%s: decoded", data)
		}
	}
}

// pagedServer serves a NamespaceManager list in pages of the given items,
// as the API server pages it, and records the queries it got.
type pagedServer struct {
	pages [][]string
	// status, when set, answers every request with this status and body.
	status int
	body   string
	// expired maps a continue token to the one a 410 answer to it carries.
	expired map[string]string

	mu      sync.Mutex
	queries []string
	paths   []string
}

// seen returns the queries and paths of the requests so far.
func (p *pagedServer) seen() (queries, paths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.queries), slices.Clone(p.paths)
}

func (p *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.queries = append(p.queries, r.URL.RawQuery)
	p.paths = append(p.paths, r.URL.Path)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if p.status != 0 {
		w.WriteHeader(p.status)
		_, _ = w.Write([]byte(p.body))
		return
	}
	if next, ok := p.expired[r.URL.Query().Get("continue")]; ok {
		w.WriteHeader(http.StatusGone)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{"continue":%q},"status":"Failure","reason":"Expired","code":410,"message":"The provided continue parameter is too old"}`, next)
		return
	}
	i := 0
	if c := r.URL.Query().Get("continue"); c != "" {
		_, _ = fmt.Sscanf(c, "page-%d", &i)
	}
	next := ""
	if i+1 < len(p.pages) {
		next = fmt.Sprintf("page-%d", i+1)
	}
	_, _ = w.Write([]byte(listPage(next, p.pages[i]...)))
}

// managersClientFor is a Clients.Managers that talks to server.
func managersClientFor(t *testing.T, server http.Handler) rest.Interface {
	t.Helper()
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	restCfg := dynamic.ConfigFor(&rest.Config{Host: ts.URL})
	gv := ManagerResource.GroupVersion()
	restCfg.GroupVersion, restCfg.APIPath = &gv, "/apis"
	client, err := rest.RESTClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// sweeperFor is a Sweeper that lists managers from server.
func sweeperFor(t *testing.T, server http.Handler, cfg Config) *Sweeper {
	t.Helper()
	return &Sweeper{cfg: cfg, clients: Clients{Managers: managersClientFor(t, server)}, log: slog.New(slog.DiscardHandler)}
}

func TestEachManagerPages(t *testing.T) {
	server := &pagedServer{pages: [][]string{{storedManager(0), storedManager(1)}, {storedManager(2)}, {storedManager(3), storedManager(4)}}}
	s := sweeperFor(t, server, Config{Namespace: "team-a", LabelSelector: "tier=e2e", PageSize: 2})
	var names []string
	if err := s.eachManager(t.Context(), false, func(m listed) { names = append(names, m.obj.GetName()) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"team-00000", "team-00001", "team-00002", "team-00003", "team-00004"}; !reflect.DeepEqual(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
	queries, paths := server.seen()
	wantQueries := []string{"labelSelector=tier%3De2e&limit=2", "continue=page-1&labelSelector=tier%3De2e&limit=2", "continue=page-2&labelSelector=tier%3De2e&limit=2"}
	if !reflect.DeepEqual(queries, wantQueries) {
		t.Errorf("queries %q, want %q", queries, wantQueries)
	}
	for _, path := range paths {
		if path != "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers" {
			t.Errorf("path %s", path)
		}
	}

	everywhere := &pagedServer{pages: [][]string{{storedManager(0)}}}
	if err := sweeperFor(t, everywhere, Config{PageSize: 500}).eachManager(t.Context(), false, func(listed) {}); err != nil {
		t.Fatal(err)
	}
	if _, paths := everywhere.seen(); !reflect.DeepEqual(paths, []string{"/apis/k8s.consol.de/v1beta1/namespacemanagers"}) {
		t.Errorf("paths %v, want the managers of every namespace", paths)
	}
}

// A page whose continue token expired is answered 410 with a token that
// resumes after the last manager listed: the listing goes on with it.
func TestEachManagerResumesPastAnExpiredToken(t *testing.T) {
	server := &pagedServer{
		pages:   [][]string{{storedManager(0), storedManager(1)}, {storedManager(2)}, {storedManager(3), storedManager(4)}},
		expired: map[string]string{"page-1": "page-2"},
	}
	var names []string
	if err := sweeperFor(t, server, Config{PageSize: 2}).eachManager(t.Context(), false, func(m listed) { names = append(names, m.obj.GetName()) }); err != nil {
		t.Fatal(err)
	}
	// The manager on the expired page was removed meanwhile, say: the new
	// token resumes after it.
	if want := []string{"team-00000", "team-00001", "team-00003", "team-00004"}; !reflect.DeepEqual(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
	// A 410 without a token, or on the first page, ends the listing.
	server = &pagedServer{status: http.StatusGone, body: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`}
	if err := sweeperFor(t, server, Config{PageSize: 2}).eachManager(t.Context(), false, func(listed) {}); !apierrors.IsResourceExpired(err) {
		t.Errorf("error %v, want the 410", err)
	}
}

// The server's refusal comes back as the error it describes, its message
// included: a sweep tells a missing CRD by NotFound, and a user reads why
// access was denied.
func TestEachManagerReportsTheServersError(t *testing.T) {
	tests := []struct {
		code    int
		reason  string
		message string
		is      func(error) bool
	}{
		{http.StatusNotFound, "NotFound", "the server could not find the requested resource", apierrors.IsNotFound},
		{http.StatusForbidden, "Forbidden", `namespacemanagers.k8s.consol.de is forbidden: User "system:serviceaccount:ci:nsman" cannot list resource "namespacemanagers"`, apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			server := &pagedServer{status: tt.code, body: fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":%q}`, tt.reason, tt.code, tt.message)}
			err := sweeperFor(t, server, Config{PageSize: 500}).eachManager(t.Context(), false, func(listed) { t.Error("a manager from an error") })
			if !tt.is(err) || err.Error() != tt.message {
				t.Errorf("error %v, want %s: %s", err, tt.reason, tt.message)
			}
		})
	}
}

// Once ctx is done, the page in hand is finished and no further page is
// fetched.
func TestEachManagerStopsWithItsContext(t *testing.T) {
	server := &pagedServer{pages: [][]string{{storedManager(0), storedManager(1)}, {storedManager(2)}, {storedManager(3)}, {storedManager(4)}}}
	s := sweeperFor(t, server, Config{PageSize: 2})
	ctx, cancel := context.WithCancel(t.Context())
	var names []string
	err := s.eachManager(ctx, false, func(m listed) {
		names = append(names, m.obj.GetName())
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if want := []string{"team-00000", "team-00001"}; !reflect.DeepEqual(names, want) {
		t.Errorf("handled %v, want the first page, %v", names, want)
	}
	// The second page may have been fetched while the first was handled;
	// none after it.
	if queries, _ := server.seen(); len(queries) > 2 {
		t.Errorf("%d pages fetched after the sweep stopped: %q", len(queries)-1, queries)
	}
}

// A page larger than wholePage is decoded as it is read, to the same
// managers as a page decoded at once, each keeping nsman's annotations
// only; a cut-off or trailing page fails either way.
func TestDecodeLargePage(t *testing.T) {
	padding := strings.Repeat("p", 240<<10)
	var items []string
	for i := range wholePage/len(padding) + 4 {
		item := strings.Replace(storedManager(i), `"annotations":{`, `"annotations":{"padding":"`+padding+`","`+status.HoldAnnotation+`":"2026-12-01T00:00:00Z",`, 1)
		items = append(items, item)
	}
	data := listPage("next", items...)
	if len(data) <= wholePage {
		t.Fatalf("a page of %d bytes, want more than %d", len(data), wholePage)
	}
	large, err := decodePage([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(large.Items) != len(items) || large.Metadata.Continue != "next" {
		t.Fatalf("%d items, continue %q; want %d, next", len(large.Items), large.Metadata.Continue, len(items))
	}
	for i, item := range items {
		small, err := decodePage([]byte(listPage("", item)))
		if err != nil {
			t.Fatal(err)
		}
		got, want := large.Items[i].listed(), small.Items[0].listed()
		if !reflect.DeepEqual(got.obj.Object, want.obj.Object) || string(got.status) != string(want.status) {
			t.Fatalf("item %d of the large page: %v, want %v", i, got.obj.Object, want.obj.Object)
		}
		if a := got.obj.GetAnnotations(); len(a) != 1 || a[status.HoldAnnotation] == "" {
			t.Errorf("item %d: annotations %v, want nsman's hold alone", i, a)
		}
	}
	for _, bad := range []string{data[:len(data)-1], data + "{}"} {
		if _, err := decodePage([]byte(bad)); err == nil {
			t.Errorf("a page of %d bytes cut off, or with data after it, decoded", len(bad))
		}
	}
}
