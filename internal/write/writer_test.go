package write

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// A manager patch goes to the manager or its status as a JSON merge patch,
// and the API server's refusal comes back as the error it describes: a
// claim relies on telling a conflict apart.
func TestPatchManager(t *testing.T) {
	type got struct{ method, path, contentType, body string }
	var requests []got
	server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		requests = append(requests, got{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(body)})
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/m/status" {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,` +
				`"message":"Operation cannot be fulfilled on namespacemanagers.k8s.consol.de \"m\": the object has been modified"}`))
			return
		}
		_, _ = w.Write([]byte(`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"m","namespace":"team-a"}}`))
	})
	w := New(nil, nil, clustertest.ManagersClient(t, server), nil, false)

	if err := w.PatchManager(t.Context(), "team-a", "m", Patch{Body: []byte(`{"spec":{"deactivated":true}}`)}); err != nil {
		t.Fatal(err)
	}
	err := w.PatchManager(t.Context(), "team-a", "m", Patch{Subresource: "status", Body: []byte(`{"status":{"state":"fired"}}`)})
	if !apierrors.IsConflict(err) {
		t.Errorf("status patch: error %v, want a conflict", err)
	}
	want := []got{
		{"PATCH", "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/m", "application/merge-patch+json", `{"spec":{"deactivated":true}}`},
		{"PATCH", "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/m/status", "application/merge-patch+json", `{"status":{"state":"fired"}}`},
	}
	if len(requests) != len(want) {
		t.Fatalf("requests %+v, want %+v", requests, want)
	}
	for i := range want {
		if requests[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, requests[i], want[i])
		}
	}
}

// A namespace is deleted only if it is still the one decided on (its uid
// and, once listed, its resourceVersion), and its contents go in the
// background. A DELETE as listed is never sent twice: a retried one could
// take the change the first made for someone else's.
func TestDeleteNamespace(t *testing.T) {
	tests := []struct {
		name            string
		resourceVersion string
		status          int
		retryAfter      string
		wantErr         bool
	}{
		{name: "uid only", status: http.StatusOK},
		{name: "uid and resourceVersion", resourceVersion: "42", status: http.StatusOK},
		{name: "resourceVersion, 500 asking to retry", resourceVersion: "42", status: http.StatusInternalServerError, retryAfter: "1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type got struct {
				method, path string
				opts         metav1.DeleteOptions
			}
			var mu sync.Mutex
			var requests []got
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				g := got{method: r.Method, path: r.URL.Path}
				// The typed client sends protobuf, the REST request JSON.
				if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &g.opts); err != nil {
					t.Errorf("body %q: %v", body, err)
				}
				mu.Lock()
				requests = append(requests, g)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				status := "Success"
				if tt.status != http.StatusOK {
					status = "Failure"
				}
				_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":%q,"code":%d}`, status, tt.status)
			}))
			t.Cleanup(ts.Close)
			kube, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
			if err != nil {
				t.Fatal(err)
			}
			w := New(kube, nil, nil, nil, false)

			err = w.DeleteNamespace(t.Context(), "team-a", "uid-1", tt.resourceVersion)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want an error: %t", err, tt.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(requests) != 1 {
				t.Fatalf("%d requests %+v, want 1", len(requests), requests)
			}
			r := requests[0]
			if r.method != http.MethodDelete || r.path != "/api/v1/namespaces/team-a" {
				t.Errorf("request %s %s, want DELETE /api/v1/namespaces/team-a", r.method, r.path)
			}
			if p := r.opts.Preconditions; p == nil || p.UID == nil || *p.UID != "uid-1" {
				t.Errorf("preconditions %+v, want uid uid-1", p)
			} else if got := ptrString(p.ResourceVersion); got != tt.resourceVersion {
				t.Errorf("precondition resourceVersion %q, want %q", got, tt.resourceVersion)
			}
			if p := r.opts.PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("propagationPolicy %v, want Background", p)
			}
		})
	}
}

// applications are Argo CD's Applications, an owner a DELETE via owner
// deletes.
var applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// A DELETE via owner deletes the owner named, with foreground propagation
// and the UID read as precondition, and a refusal comes back.
func TestDeleteOwner(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusConflict} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var mu sync.Mutex
			var methods, paths []string
			var opts metav1.DeleteOptions
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				methods, paths = append(methods, r.Method), append(paths, r.URL.Path)
				if err := json.Unmarshal(body, &opts); err != nil {
					t.Errorf("body %q: %v", body, err)
				}
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				result := "Success"
				if status != http.StatusOK {
					result = "Failure"
				}
				_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":%q,"code":%d,"reason":"Conflict"}`, result, status)
			}))
			t.Cleanup(ts.Close)
			dyn, err := dynamic.NewForConfig(&rest.Config{Host: ts.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = New(nil, dyn, nil, nil, false).DeleteOwner(t.Context(), applications, "argocd", "pr-12", "uid-1")
			if got := apierrors.IsConflict(err); got != (status == http.StatusConflict) || status == http.StatusOK && err != nil {
				t.Errorf("error %v on a %d", err, status)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != 1 || methods[0] != http.MethodDelete || paths[0] != "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/pr-12" {
				t.Fatalf("requests %v %v, want one DELETE of /apis/argoproj.io/v1alpha1/namespaces/argocd/applications/pr-12", methods, paths)
			}
			if p := opts.Preconditions; p == nil || p.UID == nil || *p.UID != "uid-1" || p.ResourceVersion != nil {
				t.Errorf("preconditions %+v, want uid uid-1 alone", p)
			}
			if p := opts.PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
				t.Errorf("propagationPolicy %v, want Foreground", p)
			}
		})
	}
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// A namespace patch carries its type (the records of rules are JSON
// patches, holds merge patches) to the namespace named, and a refusal
// comes back.
func TestPatchNamespace(t *testing.T) {
	tests := []struct {
		name     string
		patch    Patch
		wantType types.PatchType
	}{
		{name: "merge", patch: Patch{Body: []byte(`{"metadata":{"labels":{"hold":"yes"}}}`)}, wantType: types.MergePatchType},
		{name: "JSON", patch: JSONPatch("", PatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{"a": "b"}}), wantType: types.JSONPatchType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
			w := New(kube, nil, nil, nil, false)

			if err := w.PatchNamespace(t.Context(), "team-a", tt.patch); err != nil {
				t.Fatal(err)
			}
			if err := w.PatchNamespace(t.Context(), "team-b", tt.patch); !apierrors.IsNotFound(err) {
				t.Errorf("patch of a missing namespace: error %v, want not found", err)
			}
			actions := kube.Actions()
			if len(actions) != 2 {
				t.Fatalf("actions %+v, want 2 patches", actions)
			}
			for i, name := range []string{"team-a", "team-b"} {
				p, ok := actions[i].(k8stesting.PatchAction)
				if !ok {
					t.Fatalf("action %d: %+v, want a patch", i, actions[i])
				}
				if p.GetResource().Resource != "namespaces" || p.GetName() != name || p.GetSubresource() != "" {
					t.Errorf("action %d: patch of %s %q subresource %q, want namespaces %q", i, p.GetResource().Resource, p.GetName(), p.GetSubresource(), name)
				}
				if p.GetPatchType() != tt.wantType || string(p.GetPatch()) != string(tt.patch.Body) {
					t.Errorf("action %d: %s %s, want %s %s", i, p.GetPatchType(), p.GetPatch(), tt.wantType, tt.patch.Body)
				}
			}
		})
	}
}

// A workload is scaled down by a merge patch of the resource named, in its
// namespace; the workload the API server answers with, however large, is
// read past, not decoded; a refusal comes back as the error it describes
// (a change relies on telling a conflict apart).
func TestPatchWorkload(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team-a"},"spec":{"replicas":0,"template":{"spec":{"containers":[`)
	for i := range 7000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"c%04d","image":"i","resources":{"requests":{"cpu":"1m","memory":"1Mi"}},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"Always"}`, i)
	}
	b.WriteString(`]}}}}`)
	answer := b.String()
	type got struct{ method, path, contentType, body string }
	var requests []got
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		requests = append(requests, got{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(body)})
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/conflicted") {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409}`)
			return
		}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(server.Close)
	config := &rest.Config{Host: server.URL}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	w := New(kube, dyn, nil, nil, false)
	patch := []byte(`{"spec":{"replicas":0}}`)
	for _, tt := range []struct {
		resource schema.GroupVersionResource
		path     string
	}{
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "/apis/apps/v1/namespaces/team-a/deployments/web"},
		{schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, "/api/v1/namespaces/team-a/replicationcontrollers/web"},
	} {
		requests = nil
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		err := w.PatchWorkload(t.Context(), tt.resource, "team-a", "web", patch)
		goruntime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		want := got{http.MethodPatch, tt.path, string(types.MergePatchType), string(patch)}
		if len(requests) != 1 || requests[0] != want {
			t.Errorf("requests %+v, want %+v", requests, want)
		}
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 512<<10 {
			t.Errorf("%s: a patch answered with %d bytes allocated %d bytes, want at most 512 KiB", tt.resource.Resource, len(answer), allocated)
		}
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if err := w.PatchWorkload(t.Context(), deployments, "team-a", "conflicted", patch); !apierrors.IsConflict(err) {
		t.Errorf("error %v, want a conflict", err)
	}
}

// An Event is created in its own namespace, where its object is.
func TestEvent(t *testing.T) {
	kube := kubefake.NewClientset()
	w := New(kube, nil, nil, nil, false)
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "m.1", Namespace: "team-a"}, Reason: "Fired", Note: "deleted"}

	if err := w.Event(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	actions := kube.Actions()
	if len(actions) != 1 {
		t.Fatalf("actions %+v, want 1 create", actions)
	}
	c, ok := actions[0].(k8stesting.CreateAction)
	if !ok {
		t.Fatalf("action %+v, want a create", actions[0])
	}
	want := schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	if c.GetResource() != want || c.GetNamespace() != "team-a" {
		t.Errorf("create of %v in %q, want %v in team-a", c.GetResource(), c.GetNamespace(), want)
	}
	got, err := kube.EventsV1().Events("team-a").Get(t.Context(), "m.1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != "Fired" || got.Note != "deleted" {
		t.Errorf("event %q %q, want Fired deleted", got.Reason, got.Note)
	}
}

func TestPatchType(t *testing.T) {
	tests := []struct {
		name  string
		patch Patch
		want  types.PatchType
	}{
		{name: "merge", patch: Patch{}, want: types.MergePatchType},
		{name: "merge of the status", patch: Patch{Subresource: "status"}, want: types.MergePatchType},
		{name: "JSON", patch: Patch{JSON: true}, want: types.JSONPatchType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.patch.Type(); got != tt.want {
				t.Errorf("Type() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestJSONPatch(t *testing.T) {
	tests := []struct {
		name        string
		subresource string
		ops         []PatchOp
		want        string
	}{
		{
			name: "record of the status",
			ops: []PatchOp{
				{Op: "test", Path: "/metadata/resourceVersion", Value: "7"},
				{Op: "replace", Path: "/status/state", Value: "fired"},
			},
			subresource: "status",
			want:        `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"replace","path":"/status/state","value":"fired"}]`,
		},
		{
			name: "remove of an annotation",
			ops:  []PatchOp{{Op: "remove", Path: AnnotationPointer("nsman.consol.de/hold")}},
			want: `[{"op":"remove","path":"/metadata/annotations/nsman.consol.de~1hold","value":null}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := JSONPatch(tt.subresource, tt.ops...)
			if !got.JSON || got.Subresource != tt.subresource || string(got.Body) != tt.want {
				t.Errorf("JSONPatch = {JSON:%t Subresource:%q Body:%s}, want {JSON:true Subresource:%q Body:%s}",
					got.JSON, got.Subresource, got.Body, tt.subresource, tt.want)
			}
		})
	}
}

// Annotation keys hold a "/" and a JSON pointer splits at each (RFC 6901).
func TestAnnotationPointer(t *testing.T) {
	tests := []struct{ key, want string }{
		{key: "owner", want: "/metadata/annotations/owner"},
		{key: "nsman.consol.de/record", want: "/metadata/annotations/nsman.consol.de~1record"},
		{key: "a/b/c", want: "/metadata/annotations/a~1b~1c"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := AnnotationPointer(tt.key); got != tt.want {
				t.Errorf("AnnotationPointer(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestMustJSON(t *testing.T) {
	if got, want := MustJSON(map[string]any{"b": 2, "a": "x/y"}), `{"a":"x/y","b":2}`; got != want {
		t.Errorf("MustJSON = %s, want %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustJSON of a channel did not panic")
		}
	}()
	MustJSON(make(chan int))
}

// A dry run decides and records alike but sends nothing: its Writer has no
// client at all, so that touching one would panic.
func TestDryRun(t *testing.T) {
	if got := New(nil, nil, nil, nil, false).Done(); got != report.StateFired {
		t.Errorf("Done() through the API = %q, want %q", got, report.StateFired)
	}
	w := New(nil, nil, nil, nil, true)
	if got := w.Done(); got != report.StatePlanned {
		t.Errorf("Done() of a dry run = %q, want %q", got, report.StatePlanned)
	}
	ctx := t.Context()
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	calls := []struct {
		name string
		call func() error
	}{
		{"PatchManager", func() error { return w.PatchManager(ctx, "team-a", "m", Patch{Body: []byte(`{}`)}) }},
		{"PatchNamespace", func() error { return w.PatchNamespace(ctx, "team-a", Patch{Body: []byte(`{}`)}) }},
		{"DeleteNamespace", func() error { return w.DeleteNamespace(ctx, "team-a", "uid-1", "42") }},
		{"PatchWorkload", func() error { return w.PatchWorkload(ctx, deployments, "team-a", "web", []byte(`{}`)) }},
		{"DeleteOwner", func() error { return w.DeleteOwner(ctx, applications, "argocd", "pr-12", "uid-1") }},
		{"Post", func() error { return w.Post(ctx, "http://127.0.0.1:1/", []byte(`{}`), "key") }},
		{"Silent", func() error { return w.Silent("team-a", "http://127.0.0.1:1/") }},
		{"Event", func() error { return w.Event(ctx, &eventsv1.Event{}) }},
		{"Deliver", func() error {
			d, err := w.Deliver(ctx, webhook.Route{Tenant: true, Scope: "team-a"}, "http://127.0.0.1:1/", []byte(`{}`), "key")
			if d != (webhook.Delivery{}) {
				return fmt.Errorf("delivery %+v, want the zero one", d)
			}
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Webhooks go through the sender given, whose allow list, routes and
// silenced receivers are the sweep's.
func TestWebhooks(t *testing.T) {
	type got struct{ path, key, body string }
	var mu sync.Mutex
	var received []got
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.URL.Path, r.Header.Get(webhook.IdempotencyKeyHeader), string(body)})
		mu.Unlock()
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
	}))
	t.Cleanup(ts.Close)
	allow, err := webhook.ParseAllowList([]string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	sender := webhook.NewSender(webhook.Options{Timeout: 200 * time.Millisecond, MaxAttempts: 1, Allow: allow})
	w := New(nil, nil, nil, sender, false)
	ctx := t.Context()

	if err := w.Post(ctx, ts.URL+"/post", []byte(`{"a":1}`), "key-1"); err != nil {
		t.Fatalf("post: %v", err)
	}
	if err := w.Post(ctx, "http://localhost.invalid/post", []byte(`{}`), "key-2"); err == nil {
		t.Error("post to a receiver off the allow list: no error")
	}
	d, err := w.Deliver(ctx, webhook.Route{Scope: "team-a"}, ts.URL+"/deliver", []byte(`{"b":2}`), "key-3")
	if err != nil || d.Attempts != 1 || d.StatusCode != http.StatusOK {
		t.Errorf("deliver: %+v, %v, want 1 attempt answered 200", d, err)
	}
	if err := w.Silent("team-a", ts.URL); err != nil {
		t.Errorf("silent before a timeout: %v", err)
	}
	if _, err := w.Deliver(ctx, webhook.Route{Scope: "team-a"}, ts.URL+"/slow", nil, "key-4"); err == nil {
		t.Error("deliver to a receiver that never answers: no error")
	}
	if err := w.Silent("team-a", ts.URL); err == nil {
		t.Error("silent in the scope a delivery timed out in: nil")
	}
	if err := w.Silent("", ts.URL); err != nil {
		t.Errorf("silent in another scope: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []got{{"/post", "key-1", `{"a":1}`}, {"/deliver", "key-3", `{"b":2}`}, {"/slow", "key-4", ""}}
	if len(received) != len(want) {
		t.Fatalf("received %+v, want %+v", received, want)
	}
	for i := range want {
		if received[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, received[i], want[i])
		}
	}
}
