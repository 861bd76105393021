package integration

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/test/nsmantest"
)

// ownerIndex is a sweep's owner index reading as cfg's user, Argo CD's
// namespace argoCD.
func ownerIndex(t *testing.T, cfg *rest.Config, argoCD string) (*probe.Owners, cluster.Reader) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rd := cluster.Reader{Clients: cluster.Clients{Kube: kube, Metadata: meta}, PageSize: 500, Log: slog.New(slog.DiscardHandler)}
	return probe.NewOwners(probe.Reads{Reader: rd, ClaimTTL: time.Minute}, argoCD), rd
}

// onGitOpsCRDs sets test t up on the GitOps projects' own CRDs: within
// three minutes, in two namespaces of its own, home (for its managers and
// rules) and argo (Argo CD's), reading namespaces as a sweep does with rd.
func onGitOpsCRDs(t *testing.T, e *nsmantest.Env) (ctx context.Context, home, argo string, rd cluster.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	home, argo = shared.Namespace(t), shared.Namespace(t)
	_, rd = ownerIndex(t, shared.AdminConfig, argo)
	return ctx, home, argo, rd
}

// ownerKind is the registered owner kind named name (Application,
// Kustomization, HelmRelease).
func ownerKind(t *testing.T, name string) owner.Kind {
	t.Helper()
	i := slices.IndexFunc(owner.Kinds(), func(k owner.Kind) bool { return k.Name == name })
	if i < 0 {
		t.Fatalf("no owner kind %s", name)
	}
	return owner.Kinds()[i]
}

// markedNamespace creates a namespace for t with labels and annotations,
// and returns it as a sweep reads it.
func markedNamespace(t *testing.T, rd cluster.Reader, labels, annotations map[string]string) cluster.Namespace {
	t.Helper()
	name := shared.Namespace(t)
	ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range labels {
		metav1.SetMetaDataLabel(&ns.ObjectMeta, k, v)
	}
	for k, v := range annotations {
		metav1.SetMetaDataAnnotation(&ns.ObjectMeta, k, strings.ReplaceAll(v, "NS", name))
	}
	if _, err := shared.Admin.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	read, ok, err := rd.NamespaceNow(t.Context(), name)
	if err != nil || !ok {
		t.Fatalf("read namespace %s: %v (found %v)", name, err, ok)
	}
	return read
}

// TestOwnerIndexOnTheRealCRDs: the owner index reads Argo CD's and Flux's
// own CRDs: an owner each marker names is present while it exists (being
// deleted too), gone once it is deleted, and so when read again by name; a
// kind a marker names that does not exist, or one nsman may not list, is
// unknown; a kind whose CRD is not installed is skipped without an error,
// its owners unknown, read again by name too.
func TestOwnerIndexOnTheRealCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	admin, err := dynamic.NewForConfig(shared.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	nsmantest.InstallGitOpsCRDs(t, admin)
	home := shared.Namespace(t)
	kinds := map[string]owner.Kind{}
	for _, k := range owner.Kinds() {
		kinds[k.Name] = k
	}
	create := func(k owner.Kind, name string, mutate func(*unstructured.Unstructured)) {
		t.Helper()
		createOwner(ctx, t, admin, k, home, name, mutate)
	}
	_, rd := ownerIndex(t, shared.AdminConfig, home)
	tracked := markedNamespace(t, rd, nil, map[string]string{"argocd.argoproj.io/tracking-id": "pr-app:/Namespace:NS/NS"})
	qualified := markedNamespace(t, rd, nil, map[string]string{"argocd.argoproj.io/tracking-id": home + "_deleting:/Namespace:NS/NS"})
	kustomized := markedNamespace(t, rd, map[string]string{"kustomize.toolkit.fluxcd.io/name": "pr-k", "kustomize.toolkit.fluxcd.io/namespace": home}, nil)
	helmed := markedNamespace(t, rd, map[string]string{"helm.toolkit.fluxcd.io/name": "pr-h", "helm.toolkit.fluxcd.io/namespace": home}, nil)
	annotated := markedNamespace(t, rd, nil, map[string]string{policy.OwnerAnnotation: "configmaps/" + home + "/pr-cm"})
	nowhere := markedNamespace(t, rd, nil, map[string]string{policy.OwnerAnnotation: "gizmos.example.com/" + home + "/g"})
	created := markedNamespace(t, rd, nil, nil)
	create(kinds["Application"], "pr-app", nil)
	create(kinds["Application"], "deleting", func(o *unstructured.Unstructured) { o.SetFinalizers([]string{"nsman.test/hold"}) })
	create(kinds["Application"], "creates", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, created.Name, "spec", "destination", "namespace")
		_ = unstructured.SetNestedStringSlice(o.Object, []string{"CreateNamespace=true"}, "spec", "syncPolicy", "syncOptions")
	})
	create(kinds["Kustomization"], "pr-k", nil)
	create(kinds["HelmRelease"], "pr-h", nil)
	if _, err := shared.Admin.CoreV1().ConfigMaps(home).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pr-cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apps := admin.Resource(kinds["Application"].Resource).Namespace(home)
	if err := apps.Delete(ctx, "deleting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = apps.Patch(context.Background(), "deleting", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	type want struct {
		ns       cluster.Namespace
		presence policy.OwnerPresence
		why      string
	}
	check := func(x *probe.Owners, wants ...want) {
		t.Helper()
		for _, w := range wants {
			got := x.Of(ctx, w.ns, "")
			if got == nil || got.Presence != w.presence || !strings.Contains(got.Why, w.why) || w.why == "" && got.Why != "" {
				t.Errorf("owner of %s: %+v, want presence %v, why %q", w.ns.Name, got, w.presence, w.why)
			}
		}
	}
	x, _ := ownerIndex(t, shared.AdminConfig, home)
	check(x, want{ns: tracked, presence: policy.OwnerPresent}, want{ns: qualified, presence: policy.OwnerPresent},
		want{ns: kustomized, presence: policy.OwnerPresent}, want{ns: helmed, presence: policy.OwnerPresent},
		want{ns: annotated, presence: policy.OwnerPresent}, want{ns: created, presence: policy.OwnerPresent},
		want{ns: nowhere, presence: policy.OwnerUnknown, why: "names a kind that does not exist"})
	if got := x.Of(ctx, created, ""); got.Ref != "applications.argoproj.io/"+home+"/creates" || got.By != owner.CreatedBy {
		t.Errorf("owner of a namespace an Application creates: %+v", got)
	}

	// The owners deleted: the next sweep finds them gone.
	if err := apps.Delete(ctx, "pr-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Resource(kinds["Kustomization"].Resource).Namespace(home).Delete(ctx, "pr-k", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	x, _ = ownerIndex(t, shared.AdminConfig, home)
	check(x, want{ns: tracked, presence: policy.OwnerGone}, want{ns: kustomized, presence: policy.OwnerGone},
		want{ns: helmed, presence: policy.OwnerPresent}, want{ns: qualified, presence: policy.OwnerPresent})
	// Read again by name, as before a DELETE acts on an owner's going.
	for ref, want := range map[string]policy.OwnerPresence{
		"applications.argoproj.io/" + home + "/pr-app": policy.OwnerGone, "applications.argoproj.io/" + home + "/deleting": policy.OwnerPresent,
		"kustomizations.kustomize.toolkit.fluxcd.io/" + home + "/pr-k": policy.OwnerGone, "configmaps/" + home + "/pr-cm": policy.OwnerPresent,
	} {
		if got, why := x.Now(ctx, ref); got != want {
			t.Errorf("%s read again: %v (%s), want %v", ref, got, why, want)
		}
	}

	// A user who may not list the owner kinds: unknown, never gone.
	cfg, err := shared.ServiceAccountConfig(ctx, home, "lists-no-owners")
	if err != nil {
		t.Fatal(err)
	}
	denied, _ := ownerIndex(t, cfg, home)
	check(denied, want{ns: tracked, presence: policy.OwnerUnknown, why: "may not list applications.argoproj.io"},
		want{ns: helmed, presence: policy.OwnerUnknown, why: "may not list helmreleases.helm.toolkit.fluxcd.io"})

	// HelmRelease's CRD uninstalled: skipped without an error.
	uninstall(ctx, t, admin, kinds["HelmRelease"].Resource)
	// Installed again for the tests after this one (t.Context, which
	// installing asks, is done by the time of t.Cleanup).
	defer nsmantest.InstallGitOpsCRDs(t, admin)
	x, _ = ownerIndex(t, shared.AdminConfig, home)
	check(x, want{ns: helmed, presence: policy.OwnerUnknown, why: "is not installed"}, want{ns: qualified, presence: policy.OwnerPresent})
	if got, why := x.Now(ctx, "helmreleases.helm.toolkit.fluxcd.io/"+home+"/pr-h"); got != policy.OwnerUnknown {
		t.Errorf("an owner of a kind not installed, read again: %v (%s), want unknown, never gone", got, why)
	}
}

// createOwner creates an object of owner kind k (nsmantest.OwnerObject,
// changed by mutate when set) in namespace.
func createOwner(ctx context.Context, t *testing.T, admin dynamic.Interface, k owner.Kind, namespace, name string, mutate func(*unstructured.Unstructured)) {
	t.Helper()
	obj := nsmantest.OwnerObject(k, namespace, name)
	if mutate != nil {
		mutate(obj)
	}
	if _, err := admin.Resource(k.Resource).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", k.Name, name, err)
	}
}

// uninstall deletes the CRD of resource and waits until it is gone.
func uninstall(ctx context.Context, t *testing.T, admin dynamic.Interface, resource schema.GroupVersionResource) {
	t.Helper()
	crds := admin.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	name := resource.GroupResource().String()
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("CRD %s still there: %v", name, err)
	}
}
