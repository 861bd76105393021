package probe

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/policy"
)

// Where the owner kinds are listed, cluster-wide.
const (
	applicationsPath   = "/apis/argoproj.io/v1alpha1/applications"
	kustomizationsPath = "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"
	helmReleasesPath   = "/apis/helm.toolkit.fluxcd.io/v2/helmreleases"
	widgetsPath        = "/apis/example.com/v1/widgets"
)

// listOf is a list of objects as the API server serves it, each item
// given as JSON.
func listOf(items ...string) string {
	return `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[` + strings.Join(items, ",") + `]}`
}

// ownerItem is an object namespace/name, with spec as JSON ("" for none).
func ownerItem(namespace, name, spec string) string {
	if spec == "" {
		spec = "{}"
	}
	return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q,"uid":"u-%s"},"spec":%s}`, name, namespace, name, spec)
}

// createsNamespace is an Application's spec that creates namespace ns in
// this cluster.
func createsNamespace(ns string) string {
	return `{"destination":{"server":"https://kubernetes.default.svc","namespace":"` + ns + `"},"syncPolicy":{"syncOptions":["CreateNamespace=true"]}}`
}

// ownedNamespace is namespace name with labels and annotations.
func ownedNamespace(name string, labels, annotations map[string]string) cluster.Namespace {
	ns := cluster.Namespace{}
	ns.Name, ns.Labels = name, cluster.PackLabels(name, labels)
	ns.OwnerMarkers = cluster.AnnotationsOf(annotations)
	return ns
}

// countedOwners serves bodies (with DiscoveryBodies) and counts the
// requests to each path.
func countedOwners(t *testing.T, bodies map[string]string) (*Owners, func(path string) int) {
	t.Helper()
	all := clustertest.DiscoveryBodies()
	for k, v := range bodies {
		all[k] = v
	}
	var mu sync.Mutex
	asked := map[string]int{}
	kube := clustertest.APIServer(t, all, func(path string) {
		mu.Lock()
		defer mu.Unlock()
		asked[path]++
	})
	x := NewOwners(testReads(cluster.Clients{Kube: kube}, defaultClaimTTL, nil), "argocd")
	return x, func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return asked[path]
	}
}

func TestOwnersOf(t *testing.T) {
	deleting := `{"metadata":{"name":"pr-6","namespace":"argocd","uid":"u","deletionTimestamp":"2026-12-01T09:00:00Z"},"spec":{}}`
	x, asked := countedOwners(t, map[string]string{
		applicationsPath: listOf(ownerItem("argocd", "pr-1", ""), ownerItem("argocd", "preview-3", createsNamespace("pr-3")),
			ownerItem("argocd", "other-cluster", `{"destination":{"server":"https://prod.example.com","namespace":"pr-5"},"syncPolicy":{"syncOptions":["CreateNamespace=true"]}}`),
			ownerItem("team-a", "pr-7", ""), ownerItem("team-a", "claims-pr-9", createsNamespace("pr-9")), deleting),
		kustomizationsPath: listOf(ownerItem("flux-system", "k-1", "")),
		widgetsPath:        listOf(ownerItem("team", "w1", "")),
	})
	tracked := func(app, ns string) map[string]string {
		return map[string]string{"argocd.argoproj.io/tracking-id": app + ":/Namespace:" + ns + "/" + ns}
	}
	kustomized := func(name string) map[string]string {
		return map[string]string{"kustomize.toolkit.fluxcd.io/name": name, "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	}
	helmed := map[string]string{"helm.toolkit.fluxcd.io/name": "h", "helm.toolkit.fluxcd.io/namespace": "flux-system"}
	annotated := func(ref string) map[string]string { return map[string]string{policy.OwnerAnnotation: ref} }
	for _, tc := range []struct {
		name                string
		labels, annotations map[string]string
		remembered          string
		// want is the owner's ref, by and presence; why a part of its Why;
		// none: nil.
		ref, by  string
		presence policy.OwnerPresence
		why      string
		none     bool
	}{
		{name: "pr-1", annotations: tracked("pr-1", "pr-1"), ref: "applications.argoproj.io/argocd/pr-1", by: "argocd.argoproj.io/tracking-id", presence: policy.OwnerPresent},
		{name: "pr-2", annotations: tracked("pr-2", "pr-2"), ref: "applications.argoproj.io/argocd/pr-2", by: "argocd.argoproj.io/tracking-id", presence: policy.OwnerGone},
		{name: "pr-7", annotations: tracked("team-a_pr-7", "pr-7"), ref: "applications.argoproj.io/team-a/pr-7", by: "argocd.argoproj.io/tracking-id", presence: policy.OwnerPresent},
		{name: "pr-6", annotations: tracked("pr-6", "pr-6"), ref: "applications.argoproj.io/argocd/pr-6", by: "argocd.argoproj.io/tracking-id", presence: policy.OwnerPresent},
		{name: "pr-3", ref: "applications.argoproj.io/argocd/preview-3", by: "spec.syncPolicy.syncOptions CreateNamespace=true", presence: policy.OwnerPresent},
		{name: "pr-3", remembered: "applications.argoproj.io/argocd/pr-3-old", ref: "applications.argoproj.io/argocd/preview-3", by: "spec.syncPolicy.syncOptions CreateNamespace=true", presence: policy.OwnerPresent},
		{name: "pr-4", remembered: "applications.argoproj.io/argocd/pr-4", ref: "applications.argoproj.io/argocd/pr-4", by: policy.OwnerRemembered, presence: policy.OwnerGone},
		{name: "pr-4", remembered: "applications.argoproj.io/argocd/pr-1", ref: "applications.argoproj.io/argocd/pr-1", by: policy.OwnerRemembered, presence: policy.OwnerPresent},
		{name: "pr-4", remembered: "pr-4", by: policy.OwnerRemembered, presence: policy.OwnerUnknown, ref: "pr-4", why: "the owner remembered does not parse"},
		{name: "pr-5", none: true},
		{name: "pr-9", none: true},
		{name: "pr-8", annotations: tracked("pr-8", "pr-9"), by: "argocd.argoproj.io/tracking-id", presence: policy.OwnerUnknown, why: "not this namespace"},
		{name: "pr-8", annotations: map[string]string{"argocd.argoproj.io/tracking-id": "pr-8"}, remembered: "applications.argoproj.io/argocd/pr-8",
			by: "argocd.argoproj.io/tracking-id", presence: policy.OwnerUnknown, why: "does not parse"},
		{name: "k-1", labels: kustomized("k-1"), ref: "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/k-1", by: "kustomize.toolkit.fluxcd.io/name", presence: policy.OwnerPresent},
		{name: "k-2", labels: kustomized("k-2"), ref: "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/k-2", by: "kustomize.toolkit.fluxcd.io/name", presence: policy.OwnerGone},
		{name: "h-1", labels: helmed, ref: "helmreleases.helm.toolkit.fluxcd.io/flux-system/h", by: "helm.toolkit.fluxcd.io/name", presence: policy.OwnerUnknown, why: "HelmRelease (helm.toolkit.fluxcd.io/v2, Resource=helmreleases) is not installed"},
		{name: "w-1", annotations: annotated("widgets.example.com/team/w1"), ref: "widgets.example.com/team/w1", by: policy.OwnerAnnotation, presence: policy.OwnerPresent},
		{name: "w-2", annotations: annotated("widgets.example.com/team/w2"), ref: "widgets.example.com/team/w2", by: policy.OwnerAnnotation, presence: policy.OwnerGone},
		{name: "w-3", annotations: annotated("pools.cluster.example.com/team/p"), ref: "pools.cluster.example.com/team/p", by: policy.OwnerAnnotation, presence: policy.OwnerUnknown, why: "not namespaced"},
		{name: "w-4", annotations: annotated("gizmos.example.com/team/g"), ref: "gizmos.example.com/team/g", by: policy.OwnerAnnotation, presence: policy.OwnerUnknown, why: "names a kind that does not exist"},
		{name: "w-5", annotations: annotated("gizmos.example.com/team"), by: policy.OwnerAnnotation, presence: policy.OwnerUnknown, why: "does not parse"},
	} {
		t.Run(tc.name+"/"+tc.remembered, func(t *testing.T) {
			got := x.Of(t.Context(), ownedNamespace(tc.name, tc.labels, tc.annotations), tc.remembered)
			if tc.none {
				if got != nil {
					t.Fatalf("owner %+v, want none", *got)
				}
				return
			}
			if got == nil {
				t.Fatal("no owner")
			}
			if got.Ref != tc.ref || got.By != tc.by || got.Presence != tc.presence || !strings.Contains(got.Why, tc.why) || tc.why == "" && got.Why != "" {
				t.Errorf("owner %+v\nwant ref %q by %q presence %v why %q", *got, tc.ref, tc.by, tc.presence, tc.why)
			}
		})
	}
	// One list per kind per sweep, however many namespaces asked.
	for _, path := range []string{applicationsPath, kustomizationsPath, helmReleasesPath, widgetsPath} {
		if n := asked(path); n != 1 {
			t.Errorf("%s listed %d times, want once", path, n)
		}
	}
	if n := asked("/apis"); n > 1 {
		t.Errorf("discovery asked %d times, want once", n)
	}
}

// A list refused, or cut at MaxOwners, makes the owners it did not find
// unknown, never gone; one it found is present.
func TestOwnersUnknownWhenAListIsRefusedOrCut(t *testing.T) {
	apps := make([]string, MaxOwners+1)
	for i := range apps {
		apps[i] = ownerItem("argocd", fmt.Sprintf("app-%d", i), "")
	}
	x, _ := countedOwners(t, map[string]string{applicationsPath: listOf(apps...), kustomizationsPath: clustertest.Forbidden})
	tracked := func(app string) cluster.Namespace {
		return ownedNamespace("pr-1", nil, map[string]string{"argocd.argoproj.io/tracking-id": app + ":/Namespace:pr-1/pr-1"})
	}
	if got := x.Of(t.Context(), tracked("app-1"), ""); got.Presence != policy.OwnerPresent {
		t.Errorf("an owner read before the cut: %+v, want present", *got)
	}
	if got := x.Of(t.Context(), tracked(fmt.Sprintf("app-%d", MaxOwners)), ""); got.Presence != policy.OwnerUnknown || !strings.Contains(got.Why, "more than 50000") {
		t.Errorf("an owner past the cut: %+v, want unknown", *got)
	}
	kustomized := ownedNamespace("k-1", map[string]string{"kustomize.toolkit.fluxcd.io/name": "k-1", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)
	if got := x.Of(t.Context(), kustomized, ""); got.Presence != policy.OwnerUnknown || !strings.Contains(got.Why, "may not list kustomizations.kustomize.toolkit.fluxcd.io") {
		t.Errorf("an owner of a kind nsman may not list: %+v, want unknown", *got)
	}
}

// nsman's annotation names kinds owner.Kinds does not register: a sweep
// lists MaxOtherOwnerKinds of them at most.
func TestOwnersListFewOtherKinds(t *testing.T) {
	others := []string{"gizmos.example.com", "widgets.example.com", "widgets.other.example.com", "gadgets.example.com", "daemonsets.apps"}
	x, asked := countedOwners(t, map[string]string{widgetsPath: listOf(), "/apis/other.example.com/v1/widgets": listOf(), "/apis/example.com/v1/gadgets": listOf(),
		"/apis/apps/v1/daemonsets": listOf()})
	for i, kind := range others {
		got := x.Of(t.Context(), ownedNamespace("pr-1", nil, map[string]string{policy.OwnerAnnotation: kind + "/team/x"}), "")
		// gizmos are not served: they cost no list, and leave room for
		// MaxOtherOwnerKinds more.
		want := policy.OwnerGone
		if i == 0 || i > MaxOtherOwnerKinds {
			want = policy.OwnerUnknown
		}
		if got.Presence != want {
			t.Errorf("%s: %+v, want presence %v", kind, *got, want)
		}
	}
	if n := asked("/apis/apps/v1/daemonsets"); n != 0 {
		t.Errorf("the kind past MaxOtherOwnerKinds listed %d times", n)
	}
}

// An owner list that never answers is given up after --claim-ttl: its
// owners are unknown.
func TestOwnersListIsBounded(t *testing.T) {
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stalled.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: stalled.URL})
	if err != nil {
		t.Fatal(err)
	}
	x := NewOwners(testReads(cluster.Clients{Kube: kube}, time.Second, nil), "argocd")
	began := time.Now()
	got := x.Of(t.Context(), ownedNamespace("pr-1", nil, map[string]string{"argocd.argoproj.io/tracking-id": "pr-1:/Namespace:pr-1/pr-1"}), "")
	if took := time.Since(began); got.Presence != policy.OwnerUnknown || took > 3*time.Second {
		t.Errorf("an owner list that never answers: %+v after %v; want unknown within 3s", *got, took)
	}
}

// Now reads an owner again by name: present, gone when the API server
// does not find it, unknown when it does not serve its kind or refuses the
// read.
func TestOwnersNow(t *testing.T) {
	notFound := func(what string) string {
		return `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404` + what + `}`
	}
	object := func(ns, name string) string {
		return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`
	}
	type answer struct {
		code int
		body string
	}
	answers := map[string]answer{
		"/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/pr-1": {http.StatusOK, object("argocd", "pr-1")},
		// The API server's 404 of an object not found names it; that of a
		// resource it does not serve (helmreleases here) names none.
		"/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/pr-2": {http.StatusNotFound, notFound(`,"details":{"name":"pr-2","group":"argoproj.io","kind":"applications"}`)},
		"/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/k": {http.StatusForbidden,
			`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"kustomizations is forbidden"}`},
		"/apis/example.com/v1/namespaces/team/widgets/w1": {http.StatusOK, object("team", "w1")},
	}
	for path, body := range clustertest.DiscoveryBodies() {
		answers[path] = answer{http.StatusOK, body}
	}
	var mu sync.Mutex
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path]++
		mu.Unlock()
		a, ok := answers[r.URL.Path]
		if !ok {
			a = answer{http.StatusNotFound, notFound(`,"message":"the server could not find the requested resource","details":{}`)}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	x := NewOwners(testReads(cluster.Clients{Kube: kube}, defaultClaimTTL, nil), "argocd")
	for _, tc := range []struct {
		ref      string
		presence policy.OwnerPresence
		why      string
	}{
		{"applications.argoproj.io/argocd/pr-1", policy.OwnerPresent, ""},
		{"applications.argoproj.io/argocd/pr-2", policy.OwnerGone, ""},
		{"helmreleases.helm.toolkit.fluxcd.io/flux-system/h", policy.OwnerUnknown, "the server could not find the requested resource"},
		{"kustomizations.kustomize.toolkit.fluxcd.io/flux-system/k", policy.OwnerUnknown, "kustomizations is forbidden"},
		{"widgets.example.com/team/w1", policy.OwnerPresent, ""},
		{"gizmos.example.com/team/g", policy.OwnerUnknown, "names a kind that does not exist"},
		{"applications.argoproj.io/argocd", policy.OwnerUnknown, "is not <resource>.<group>/<namespace>/<name>"},
	} {
		presence, why := x.Now(t.Context(), tc.ref)
		if presence != tc.presence || !strings.Contains(why, tc.why) || tc.why == "" && why != "" {
			t.Errorf("%s: %v (%q), want %v (%q)", tc.ref, presence, why, tc.presence, tc.why)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := asked["/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/pr-1"]; n != 1 {
		t.Errorf("pr-1 read %d times, want once", n)
	}
}

// The workers of a sweep ask side by side: still one list of each kind,
// and the same answers.
func TestOwnersListOnceUnderConcurrency(t *testing.T) {
	x, asked := countedOwners(t, map[string]string{applicationsPath: listOf(ownerItem("argocd", "pr-1", "")), kustomizationsPath: listOf()})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			name := fmt.Sprintf("pr-%d", i)
			// Even: the Application pr-1, present; odd: the Kustomization
			// k, gone.
			ns, want := ownedNamespace(name, nil, map[string]string{"argocd.argoproj.io/tracking-id": "pr-1:/Namespace:" + name + "/" + name}), policy.OwnerPresent
			if i%2 == 1 {
				ns, want = ownedNamespace(name, map[string]string{"kustomize.toolkit.fluxcd.io/name": "k", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil), policy.OwnerGone
			}
			if got := x.Of(t.Context(), ns, ""); got == nil || got.Presence != want {
				t.Errorf("%s: %+v, want presence %v", name, got, want)
			}
		})
	}
	wg.Wait()
	if a, k := asked(applicationsPath), asked(kustomizationsPath); a != 1 || k != 1 {
		t.Errorf("applications listed %d times, kustomizations %d: want once each", a, k)
	}
}

// Reading an owner again by name, just before acting, takes at most the
// time a sweep gives a read of one namespace (a quarter of --claim-ttl):
// an API server that does not answer makes the owner unknown, never gone,
// and holds up no worker of the sweep.
func TestOwnersNowIsBoundedInTime(t *testing.T) {
	// It answers, with the object, only after 5 s.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"pr-1","namespace":"argocd"}}`))
		}
	}))
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	claimTTL := 400 * time.Millisecond
	x := NewOwners(testReads(cluster.Clients{Kube: kube}, claimTTL, nil), "argocd")
	start := time.Now()
	presence, why := x.Now(t.Context(), "applications.argoproj.io/argocd/pr-1")
	if took := time.Since(start); presence != policy.OwnerUnknown || !strings.Contains(why, "deadline exceeded") || took > 10*NamespaceTimeout(claimTTL) {
		t.Errorf("an owner read again from a server that does not answer: %v (%q) after %s; want unknown, within %s", presence, why, took, NamespaceTimeout(claimTTL))
	}
}

// countingBody counts what is read of a response body.
type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// Reading an owner again by name reads nothing of it but whether it
// exists: an owner whose metadata a tenant padded (here 2 MiB of
// annotations, past what an API server stores, as the bound) costs the
// sweep none of it.
func TestOwnersNowReadsNoObject(t *testing.T) {
	big := `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"pr-1","namespace":"argocd","annotations":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(big))
	}))
	defer srv.Close()
	var read atomic.Int64
	cfg := &rest.Config{Host: srv.URL, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if resp != nil {
				resp.Body = countingBody{resp.Body, &read}
			}
			return resp, err
		})
	}}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := NewOwners(testReads(cluster.Clients{Kube: kube}, defaultClaimTTL, nil), "argocd")
	if presence, why := x.Now(t.Context(), "applications.argoproj.io/argocd/pr-1"); presence != policy.OwnerPresent || read.Load() > 0 {
		t.Errorf("an owner of 2 MiB read again: %v (%q), %d bytes of it read; want present, none of it read", presence, why, read.Load())
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Prefetch lists the Applications, which create namespaces, once, ahead of
// any namespace: Of then answers from that list, and no other kind is
// listed until a namespace names it.
func TestOwnersPrefetch(t *testing.T) {
	x, asked := countedOwners(t, map[string]string{applicationsPath: listOf(ownerItem("argocd", "preview-3", createsNamespace("pr-3"))), kustomizationsPath: listOf()})
	x.Prefetch(t.Context())
	if a, k := asked(applicationsPath), asked(kustomizationsPath); a != 1 || k != 0 {
		t.Fatalf("Prefetch listed applications %d times, kustomizations %d: want once, none", a, k)
	}
	if got := x.Of(t.Context(), ownedNamespace("pr-3", nil, nil), ""); got == nil || got.Presence != policy.OwnerPresent || got.Ref != "applications.argoproj.io/argocd/preview-3" {
		t.Errorf("owner of pr-3 after Prefetch: %+v, want the Application that creates it", got)
	}
	if a := asked(applicationsPath); a != 1 {
		t.Errorf("applications listed %d times, want once: Of answers from what Prefetch listed", a)
	}
}
