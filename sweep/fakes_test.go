package sweep

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// The tests of Run sweep a fake API server: discovery answered from
// clustertest.DiscoveryBodies (and NamespaceManagers' group), every other
// request from the tracker of client-go's fake dynamic client, through its
// clients so that its Actions() record what the sweep read and wrote. The
// sweep's clients are client-go's own, over HTTP: a sweep reads lists as
// they stream (cluster.EachStreamed), through REST clients that the fake
// clientsets do not have. What the fake tracker does not do the API server's
// way is listed in fakeAPI.

// sweepAt is the API server's clock in these tests: every response's Date.
var sweepAt = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// managersGVR and namespacesGVR are the resources the fake holds managers
// and namespaces as.
var (
	managersGVR   = cluster.ManagerResource
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// fakeAPI is an API server over a fake dynamic client. Unlike the API
// server it keeps no resourceVersion preconditions (a DELETE as listed is
// done whatever changed), deletes a namespace at once rather than marking
// it Terminating, and patches a status subresource into the object whole.
// Field selectors, which the fake ignores, are applied here for the fields
// the sweep selects on (fieldsOf).
type fakeAPI struct {
	dyn       *dynamicfake.FakeDynamicClient
	discovery map[string]string
	// served are the resources discovery lists, by their list kind: the
	// others are not found.
	served map[schema.GroupVersionResource]string
	mu     sync.Mutex
	// paths are the paths asked, by method.
	paths map[string][]string
}

// newFakeAPI serves objs (unstructured) with the discovery of
// clustertest.DiscoveryBodies and NamespaceManagers' group, with or without
// (the original CRD) a status subresource.
func newFakeAPI(t *testing.T, subresource bool, objs ...runtime.Object) *fakeAPI {
	t.Helper()
	f := &fakeAPI{discovery: clustertest.DiscoveryBodies(), paths: map[string][]string{}}
	managers := []metav1.APIResource{{Name: managersGVR.Resource, Kind: "NamespaceManager", Namespaced: true, Verbs: []string{"list", "patch"}}}
	if subresource {
		managers = append(managers, metav1.APIResource{Name: managersGVR.Resource + "/status", Kind: "NamespaceManager", Namespaced: true, Verbs: []string{"patch"}})
	}
	f.discovery["/apis/"+managersGVR.GroupVersion().String()] = mustJSON(t, metav1.APIResourceList{
		TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: managersGVR.GroupVersion().String(), APIResources: managers})
	f.discovery["/api/v1"] = withResources(t, f.discovery["/api/v1"], metav1.APIResource{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list", "patch", "delete"}},
		metav1.APIResource{Name: "services", Kind: "Service", Namespaced: true, Verbs: []string{"list"}},
		metav1.APIResource{Name: "persistentvolumeclaims", Kind: "PersistentVolumeClaim", Namespaced: true, Verbs: []string{"list"}})
	f.served = listKinds(t, f.discovery)
	f.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), f.served, objs...)
	return f
}

// withResources is the APIResourceList body with more resources.
func withResources(t *testing.T, body string, more ...metav1.APIResource) string {
	t.Helper()
	var list metav1.APIResourceList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	list.APIResources = append(list.APIResources, more...)
	return mustJSON(t, list)
}

// listKinds maps every resource that discovery serves to its list kind,
// as the fake dynamic client needs to list it.
func listKinds(t *testing.T, discovery map[string]string) map[schema.GroupVersionResource]string {
	t.Helper()
	kinds := map[schema.GroupVersionResource]string{{Group: "events.k8s.io", Version: "v1", Resource: "events"}: "EventList"}
	for path, body := range discovery {
		if path == "/api" || path == "/apis" || strings.HasPrefix(body, "\x00") {
			continue
		}
		var list metav1.APIResourceList
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				kinds[gv.WithResource(r.Name)] = r.Kind + "List"
			}
		}
	}
	return kinds
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clients are the sweep's clients of f, as cmd builds them, observed by an
// observer whose local clock is sweepAt: the sweep's clock stands still.
func (f *fakeAPI) clients(t *testing.T) cluster.Clients {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	observer := cluster.NewAPIObserver(func() time.Time { return sweepAt })
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	cfg.Wrap(observer.Wrap)
	c := cluster.Clients{Observer: observer}
	var err error
	managersCfg := dynamic.ConfigFor(cfg)
	gv := managersGVR.GroupVersion()
	managersCfg.GroupVersion, managersCfg.APIPath = &gv, "/apis"
	if c.Managers, err = rest.RESTClientFor(managersCfg); err != nil {
		t.Fatal(err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

// ServeHTTP answers discovery from f.discovery, and the rest through the
// fake dynamic client.
func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Date", sweepAt.Format(http.TimeFormat))
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	f.paths[r.Method] = append(f.paths[r.Method], r.URL.Path)
	f.mu.Unlock()
	if body, ok := f.discovery[r.URL.Path]; ok && r.Method == http.MethodGet {
		if strings.HasPrefix(body, "\x00") {
			answer(w, nil, apierrors.NewServiceUnavailable("discovery unavailable"))
			return
		}
		_, _ = io.WriteString(w, body)
		return
	}
	req, ok := parsePath(r.URL.Path)
	if _, served := f.served[req.gvr]; !ok || !served {
		// As the API server answers a resource it does not serve (a CRD
		// not installed).
		answer(w, nil, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	var client dynamic.ResourceInterface = f.dyn.Resource(req.gvr)
	if req.namespace != "" {
		client = f.dyn.Resource(req.gvr).Namespace(req.namespace)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		answer(w, nil, err)
		return
	}
	var sub []string
	if req.subresource != "" {
		sub = []string{req.subresource}
	}
	ctx := r.Context()
	switch {
	case r.Method == http.MethodGet && req.name == "":
		f.list(w, r, client)
	case r.Method == http.MethodGet:
		obj, err := client.Get(ctx, req.name, metav1.GetOptions{}, sub...)
		answer(w, obj, err)
	case r.Method == http.MethodPatch:
		obj, err := client.Patch(ctx, req.name, types.PatchType(r.Header.Get("Content-Type")), body, metav1.PatchOptions{}, sub...)
		answer(w, obj, err)
	case r.Method == http.MethodDelete:
		answer(w, &metav1.Status{Status: metav1.StatusSuccess}, client.Delete(ctx, req.name, metav1.DeleteOptions{}, sub...))
	case r.Method == http.MethodPost:
		// client-go sends built-in kinds (Events) as protobuf.
		typed, err := runtime.Decode(scheme.Codecs.UniversalDeserializer(), body)
		var content map[string]any
		if err == nil {
			content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		}
		if err != nil {
			answer(w, nil, apierrors.NewBadRequest(err.Error()))
			return
		}
		obj, err := client.Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{}, sub...)
		answer(w, obj, err)
	default:
		answer(w, nil, apierrors.NewMethodNotSupported(req.gvr.GroupResource(), r.Method))
	}
}

// list answers a list, selected by labels (the fake) and fields (here), as
// metadata when asked for a PartialObjectMetadataList, in protobuf when
// that is asked for first. Pages are not cut:
// the fake lists everything at once.
func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request, client dynamic.ResourceInterface) {
	q := r.URL.Query()
	fieldSelector, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		answer(w, nil, apierrors.NewBadRequest(err.Error()))
		return
	}
	list, err := client.List(r.Context(), metav1.ListOptions{LabelSelector: q.Get("labelSelector")})
	if err != nil {
		answer(w, nil, err)
		return
	}
	kept := list.Items[:0]
	for _, it := range list.Items {
		set := fieldsOf(&it)
		for _, req := range fieldSelector.Requirements() {
			if _, known := set[req.Field]; !known {
				answer(w, nil, apierrors.NewBadRequest("field label not supported: "+req.Field))
				return
			}
		}
		if fieldSelector.Matches(set) {
			kept = append(kept, it)
		}
	}
	// The API server lists in the order of its keys, namespace then name;
	// the fake's tracker in a map's.
	slices.SortFunc(kept, func(a, b unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	list.Items = kept
	if !strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		answer(w, list, nil)
		return
	}
	partial := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}}
	for _, it := range list.Items {
		m := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": it.Object["metadata"]}, &m); err != nil {
			answer(w, nil, err)
			return
		}
		partial.Items = append(partial.Items, m)
	}
	if !strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
		answer(w, partial, nil)
		return
	}
	// As the API server does, protobuf to a client that asks for it first.
	data, err := listpagetest.ProtobufMetadata(partial)
	if err != nil {
		answer(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	_, _ = w.Write(data)
}

// fieldsOf is the fields obj may be selected on, as the API server selects
// the kinds the sweep lists with a field selector.
func fieldsOf(obj *unstructured.Unstructured) fields.Set {
	set := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
	switch obj.GetKind() {
	case "Pod":
		set["status.phase"], _, _ = unstructured.NestedString(obj.Object, "status", "phase")
		set["spec.nodeName"], _, _ = unstructured.NestedString(obj.Object, "spec", "nodeName")
	case "Service":
		set["spec.type"], _, _ = unstructured.NestedString(obj.Object, "spec", "type")
	}
	return set
}

// answer writes obj, or err as the API server's Status.
func answer(w http.ResponseWriter, obj any, err error) {
	if err != nil {
		status := apierrors.NewInternalError(err).Status()
		if known, ok := err.(apierrors.APIStatus); ok {
			status = known.Status()
		}
		status.Kind, status.APIVersion = "Status", "v1"
		w.WriteHeader(int(status.Code))
		_ = json.NewEncoder(w).Encode(status)
		return
	}
	_ = json.NewEncoder(w).Encode(obj)
}

// apiRequest is what a request's path names.
type apiRequest struct {
	gvr                          schema.GroupVersionResource
	namespace, name, subresource string
}

// parsePath reads /api/v1/… and /apis/GROUP/VERSION/…, [namespaces/NS/]
// RESOURCE[/NAME[/SUBRESOURCE]] (apiserver's RequestInfoFactory would add
// k8s.io/apiserver to go.mod for a test).
func parsePath(path string) (apiRequest, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var req apiRequest
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		req.gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		req.gvr.Group, req.gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return req, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		req.namespace, parts = parts[1], parts[2:]
	}
	req.gvr.Resource = parts[0]
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2]
	}
	return req, len(parts) <= 3
}

// actions are the fake's actions of verb on resource (plural, with
// subresource as "deployments/scale"), as "namespace/name" or, for a list,
// "namespace".
func (f *fakeAPI) actions(verb, resource string) []string {
	var out []string
	for _, a := range f.dyn.Actions() {
		r := a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		if a.GetVerb() != verb || r != resource {
			continue
		}
		switch a := a.(type) {
		case clienttesting.PatchAction:
			out = append(out, a.GetNamespace()+"/"+a.GetName())
		case clienttesting.DeleteAction:
			out = append(out, a.GetNamespace()+"/"+a.GetName())
		case clienttesting.CreateAction:
			m, _ := a.GetObject().(*unstructured.Unstructured)
			out = append(out, a.GetNamespace()+"/"+m.GetName())
		default:
			out = append(out, a.GetNamespace())
		}
	}
	return out
}

// writes counts the fake's mutating actions.
func (f *fakeAPI) writes() int {
	n := 0
	for _, a := range f.dyn.Actions() {
		if v := a.GetVerb(); v != "list" && v != "get" && v != "watch" {
			n++
		}
	}
	return n
}

// get is the object namespace/name of resource as the fake holds it.
func (f *fakeAPI) get(t *testing.T, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := f.dyn.Tracker().Get(gvr, namespace, name)
	if err != nil {
		t.Fatalf("%s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("%s %s/%s is a %T", gvr.Resource, namespace, name, obj)
	}
	return u
}

// gone reports whether the fake holds no namespace name.
func (f *fakeAPI) gone(name string) bool {
	_, err := f.dyn.Tracker().Get(namespacesGVR, "", name)
	return apierrors.IsNotFound(err)
}

// namespace is namespace name, created created ago, with labels and annotations.
func namespace(name string, created time.Duration, labels map[string]string, annotations map[string]string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(name)
	ns.SetUID(types.UID("uid-ns-" + name))
	ns.SetResourceVersion("1")
	ns.SetCreationTimestamp(metav1.NewTime(sweepAt.Add(-created)))
	ns.SetLabels(labels)
	ns.SetAnnotations(annotations)
	return ns
}

// manager is NamespaceManager namespace/name with spec, created an hour
// before sweepAt.
func manager(namespace, name string, spec map[string]any) *unstructured.Unstructured {
	m := &unstructured.Unstructured{Object: map[string]any{"apiVersion": managersGVR.GroupVersion().String(), "kind": "NamespaceManager", "spec": spec}}
	m.SetNamespace(namespace)
	m.SetName(name)
	m.SetUID(types.UID("uid-m-" + namespace + "-" + name))
	m.SetGeneration(1)
	m.SetResourceVersion("1")
	m.SetCreationTimestamp(metav1.NewTime(sweepAt.Add(-time.Hour)))
	return m
}

// policyOf is a policy named name of condition cond (with params) and
// action act (with params, or nil).
func policyOf(name, cond string, condParams map[string]any, act string, actParams map[string]any) map[string]any {
	action := map[string]any{"type": act}
	if actParams != nil {
		action["params"] = actParams
	}
	return map[string]any{"name": name, "condition": map[string]any{"type": cond, "params": condParams}, "action": action}
}

// ttl is a TTL policy of seconds that acts with act.
func ttl(seconds int64, act string, actParams map[string]any) map[string]any {
	return policyOf(fmt.Sprintf("ttl %ds", seconds), "TTL", map[string]any{"ttlSeconds": seconds}, act, actParams)
}

// deployment is Deployment namespace/name of replicas, labelled.
func deployment(namespace, name string, replicas int64, labels map[string]string) *unstructured.Unstructured {
	d := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"spec":   map[string]any{"replicas": replicas, "selector": map[string]any{"matchLabels": map[string]any{"app": name}}},
		"status": map[string]any{"replicas": replicas}}}
	d.SetNamespace(namespace)
	d.SetName(name)
	d.SetUID(types.UID("uid-d-" + namespace + "-" + name))
	d.SetLabels(labels)
	d.SetCreationTimestamp(metav1.NewTime(sweepAt.Add(-2 * time.Hour)))
	return d
}

// sweepOf is a Sweeper of cfg over f's clients, logging to t, delivering
// webhooks (and notifications) with sender.
func sweepOf(t *testing.T, f *fakeAPI, cfg Config, sender *webhook.Sender) *Sweeper {
	t.Helper()
	if cfg.SweepID == "" {
		cfg.SweepID = "sweep-test"
	}
	s, err := New(cfg, f.clients(t), sender, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testWriter logs to t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// entryOf is rep's entry of manager namespace/name (about target, when
// set), failing the test without one.
func entryOf(t *testing.T, rep report.Report, namespace, name, target string) report.Entry {
	t.Helper()
	for _, e := range rep.Entries {
		if e.Namespace == namespace && e.Name == name && (target == "" || e.Target == target) {
			return e
		}
	}
	t.Fatalf("no entry for %s/%s (target %q) among %+v", namespace, name, target, rep.Entries)
	return report.Entry{}
}
