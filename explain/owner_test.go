package explain

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
)

const trackingID = "argocd.argoproj.io/tracking-id"

var (
	applications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	helmReleases   = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
)

// servedResources is what the fake cluster's discovery says it serves: the three
// owner kinds, Secrets, and ClusterRoles (not namespaced).
func servedResources() []*metav1.APIResourceList {
	namespaced := func(gv schema.GroupVersion, resource, kind string) *metav1.APIResourceList {
		return &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: []metav1.APIResource{{Name: resource, Kind: kind, Namespaced: true, Verbs: []string{"get", "list"}}}}
	}
	return []*metav1.APIResourceList{
		namespaced(applications.GroupVersion(), "applications", "Application"),
		namespaced(kustomizations.GroupVersion(), "kustomizations", "Kustomization"),
		namespaced(helmReleases.GroupVersion(), "helmreleases", "HelmRelease"),
		namespaced(corev1.SchemeGroupVersion, "secrets", "Secret"),
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "clusterroles", Kind: "ClusterRole", Verbs: []string{"get", "list"}}}},
	}
}

// fakeCluster holds the clients Explain reads with.
type fakeCluster struct {
	kube     *kubefake.Clientset
	md       *metadatafake.FakeMetadataClient
	dyn      *dynamicfake.FakeDynamicClient
	managers http.Handler
}

// newFakeCluster serves ns, the objects present (as metadata, and whole
// to the dynamic client) and no NamespaceManagers.
func newFakeCluster(ns *corev1.Namespace, present ...*unstructured.Unstructured) *fakeCluster {
	kube := kubefake.NewClientset(ns)
	kube.Resources = servedResources()
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	var metas, objs []runtime.Object
	for _, o := range present {
		metas = append(metas, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()},
			ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}})
		objs = append(objs, o)
	}
	lists := map[schema.GroupVersionResource]string{applications: "ApplicationList", kustomizations: "KustomizationList", helmReleases: "HelmReleaseList"}
	return &fakeCluster{kube: kube, md: metadatafake.NewSimpleMetadataClient(scheme, metas...),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...), managers: servedManagers(nil)}
}

func (f *fakeCluster) explain(t *testing.T, ns string) Report {
	t.Helper()
	c := cluster.Clients{Kube: f.kube, Metadata: f.md, Dynamic: f.dyn, Managers: managersClient(t, f.managers)}
	r, err := Explain(t.Context(), c, ns, Options{ArgoCDNamespace: "argocd"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// namespace is namespace name with labels and annotations, made at created.
func namespace(name string, labels, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations,
		CreationTimestamp: metav1.NewTime(created)}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
}

var created = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

// object is an object of gvr and kind, namespace/name, with mutate applied.
func object(gvr schema.GroupVersionResource, kind, namespace, name string, mutate ...func(map[string]any)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	for _, m := range mutate {
		m(u.Object)
	}
	return u
}

// creating makes an Application create (CreateNamespace=true) namespace
// ns in this cluster.
func creating(ns string) func(map[string]any) {
	return func(o map[string]any) {
		o["spec"] = map[string]any{
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"syncPolicy":  map[string]any{"syncOptions": []any{"CreateNamespace=true"}},
		}
	}
}

func app(namespace, name string, mutate ...func(map[string]any)) *unstructured.Unstructured {
	return object(applications, "Application", namespace, name, mutate...)
}

// TestOwner: explain names the owner a sweep would, from each source, and
// reads its presence by name, as metadata: exists, gone, or unknown with
// why.
func TestOwner(t *testing.T) {
	kLabels := map[string]string{"kustomize.toolkit.fluxcd.io/name": "pr-12", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	hLabels := map[string]string{"helm.toolkit.fluxcd.io/name": "pr-12", "helm.toolkit.fluxcd.io/namespace": "flux-system"}
	for _, tc := range []struct {
		name                string
		labels, annotations map[string]string
		present             []*unstructured.Unstructured
		// tweak changes the fake cluster before explain reads it.
		tweak func(*fakeCluster)
		// ref, by and presence are the owner wanted (none when by is
		// empty); why a part of its Why.
		ref, by, presence, why string
	}{
		{name: "no marker, no Application", presence: ""},
		{name: "nsman's annotation, exists", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/team-a/pr-12"},
			present: []*unstructured.Unstructured{app("team-a", "pr-12")},
			ref:     "applications.argoproj.io/team-a/pr-12", by: policy.OwnerAnnotation, presence: OwnerExists},
		{name: "a tracking id, exists", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			present: []*unstructured.Unstructured{app("argocd", "pr-12")},
			ref:     "applications.argoproj.io/argocd/pr-12", by: trackingID, presence: OwnerExists},
		{name: "a tracking id, gone", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			present: []*unstructured.Unstructured{app("argocd", "pr-13")},
			ref:     "applications.argoproj.io/argocd/pr-12", by: trackingID, presence: OwnerGone},
		{name: "a tracking id, Applications not served", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			tweak: func(f *fakeCluster) { f.kube.Resources = f.kube.Resources[1:] },
			ref:   "applications.argoproj.io/argocd/pr-12", by: trackingID, presence: OwnerUnknown, why: "not served"},
		{name: "a tracking id that does not parse", annotations: map[string]string{trackingID: "pr-12"},
			by: trackingID, presence: OwnerUnknown, why: "does not parse"},
		{name: "a Kustomization's labels, exists", labels: kLabels,
			present: []*unstructured.Unstructured{object(kustomizations, "Kustomization", "flux-system", "pr-12")},
			ref:     "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-12", by: "kustomize.toolkit.fluxcd.io/name", presence: OwnerExists},
		{name: "a HelmRelease's labels, gone", labels: hLabels,
			ref: "helmreleases.helm.toolkit.fluxcd.io/flux-system/pr-12", by: "helm.toolkit.fluxcd.io/name", presence: OwnerGone},
		{name: "nsman's annotation naming a core kind, as metadata", annotations: map[string]string{policy.OwnerAnnotation: "secrets/team-b/token"},
			present: []*unstructured.Unstructured{object(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret", "team-b", "token")},
			ref:     "secrets/team-b/token", by: policy.OwnerAnnotation, presence: OwnerExists},
		{name: "nsman's annotation naming a kind not served", annotations: map[string]string{policy.OwnerAnnotation: "widgets.example.com/team/w1"},
			ref: "widgets.example.com/team/w1", by: policy.OwnerAnnotation, presence: OwnerUnknown, why: "not served"},
		{name: "nsman's annotation naming a kind not namespaced", annotations: map[string]string{policy.OwnerAnnotation: "clusterroles.rbac.authorization.k8s.io/team/admin"},
			ref: "clusterroles.rbac.authorization.k8s.io/team/admin", by: policy.OwnerAnnotation, presence: OwnerUnknown, why: "not namespaced"},
		{name: "an owner you may not get", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			tweak: func(f *fakeCluster) {
				f.md.PrependReactor("get", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(applications.GroupResource(), "pr-12", fmt.Errorf("no"))
				})
			},
			ref: "applications.argoproj.io/argocd/pr-12", by: trackingID, presence: OwnerUnknown, why: "you may not get"},
		{name: "no marker, an Application that creates it", present: []*unstructured.Unstructured{app("argocd", "pr-12-b", creating("pr-12")), app("argocd", "pr-12-a", creating("pr-12")), app("argocd", "other", creating("pr-13"))},
			ref: "applications.argoproj.io/argocd/pr-12-a", by: owner.CreatedBy, presence: OwnerExists},
		{name: "no marker, an Application elsewhere that creates it", present: []*unstructured.Unstructured{app("team-a", "pr-12", creating("pr-12"))}},
		{name: "no marker, an Application without CreateNamespace", present: []*unstructured.Unstructured{app("argocd", "pr-12", func(o map[string]any) {
			creating("pr-12")(o)
			o["spec"].(map[string]any)["syncPolicy"] = map[string]any{}
		})}},
		{name: "a marker first, an Application that creates it after", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/team-a/gone"},
			present: []*unstructured.Unstructured{app("argocd", "pr-12", creating("pr-12"))},
			ref:     "applications.argoproj.io/team-a/gone", by: policy.OwnerAnnotation, presence: OwnerGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(namespace("pr-12", tc.labels, tc.annotations), tc.present...)
			if tc.tweak != nil {
				tc.tweak(f)
			}
			r := f.explain(t, "pr-12")
			got := r.Owner
			if tc.by == "" {
				if got != nil {
					t.Fatalf("owner %+v, want none", *got)
				}
				return
			}
			if got == nil || got.Ref != tc.ref || got.By != tc.by || got.Presence != tc.presence || !strings.Contains(got.Why, tc.why) || tc.why == "" && got.Why != "" {
				t.Fatalf("owner %+v, want %s by %s %s (%q)", got, tc.ref, tc.by, tc.presence, tc.why)
			}
			// Presence is read as metadata: no owner's whole object (a
			// Secret's data) is read by name.
			for _, a := range f.dyn.Actions() {
				if a.GetVerb() != "list" || a.GetResource() != applications {
					t.Errorf("the dynamic client was asked %s %s", a.GetVerb(), a.GetResource())
				}
			}
		})
	}
}

// An owner read by name whose 404 is the API server's to a path nothing
// serves (the kind went after discovery) is unknown, not gone.
func TestNotServedIsNotGone(t *testing.T) {
	f := newFakeCluster(namespace("pr-12", nil, map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"}))
	f.md.PrependReactor("get", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewGenericServerResponse(http.StatusNotFound, "GET", applications.GroupResource(), "pr-12", "404 page not found", 0, true)
	})
	if o := f.explain(t, "pr-12").Owner; o == nil || o.Presence != OwnerUnknown || !strings.Contains(o.Why, "not served") {
		t.Fatalf("owner %+v, want unknown: not served", o)
	}
}

// Applications read to find the one that creates the namespace are
// bounded: past maxListed none is read, and explain says so; a list
// refused is said too, and names no owner.
func TestCreatorBounded(t *testing.T) {
	var apps []*unstructured.Unstructured
	for i := range maxListed + 1 {
		apps = append(apps, app("argocd", fmt.Sprintf("app-%05d", i)))
	}
	f := newFakeCluster(namespace("pr-12", nil, nil), apps...)
	r := f.explain(t, "pr-12")
	if r.Owner != nil || len(r.Unlisted) != 1 || !strings.Contains(r.Unlisted[0].Error, fmt.Sprintf("more than %d", maxListed)) {
		t.Fatalf("owner %+v, unlisted %+v: want none, and the list said cut", r.Owner, r.Unlisted)
	}

	f = newFakeCluster(namespace("pr-12", nil, nil))
	f.dyn.PrependReactor("list", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(applications.GroupResource(), "", fmt.Errorf("no"))
	})
	r = f.explain(t, "pr-12")
	if r.Owner != nil || len(r.Unlisted) != 1 || !strings.Contains(r.Unlisted[0].What, "applications.argoproj.io in argocd") {
		t.Fatalf("owner %+v, unlisted %+v: want none, and the list said refused", r.Owner, r.Unlisted)
	}
}

// managersClient is clustertest.ManagersClient, unthrottled: a bound of
// 10,000 managers is some 200 pages.
func managersClient(t *testing.T, server http.Handler) rest.Interface {
	t.Helper()
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	cfg := dynamic.ConfigFor(&rest.Config{Host: ts.URL, RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()})
	gv := cluster.ManagerResource.GroupVersion()
	cfg.GroupVersion, cfg.APIPath = &gv, "/apis"
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// servedManagers serves items, NamespaceManagers as JSON, a page of the
// limit asked at a time (the continue token the offset).
func servedManagers(items []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		from, _ := strconv.Atoi(req.URL.Query().Get("continue"))
		limit, _ := strconv.Atoi(req.URL.Query().Get("limit"))
		to, next := len(items), ""
		if limit > 0 && from+limit < len(items) {
			to, next = from+limit, strconv.Itoa(from+limit)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManagerList","metadata":{"continue":%q,"resourceVersion":"9"},"items":[%s]}`,
			next, strings.Join(items[from:to], ","))
	})
}
