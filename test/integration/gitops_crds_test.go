package integration

import (
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/test/nsmantest"
)

// The Argo CD and Flux CRDs at their pinned versions install (twice, as
// any number of tests may), serve each owner kind at the resource
// internal/owner reads, admit nsmantest.OwnerObject of each and refuse an
// object their schema does not: they are the projects' own CRDs, not
// stand-ins.
func TestGitOpsCRDsServeEachOwnerKind(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	ns := shared.Namespace(t)
	for _, k := range owner.Kinds() {
		client := e.Dynamic.Resource(k.Resource).Namespace(ns)
		if _, err := client.Create(t.Context(), nsmantest.OwnerObject(k, ns, "preview"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", k.Name, err)
		}
		list, err := client.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", k.Ref(), err)
		}
		if len(list.Items) != 1 || list.Items[0].GetName() != "preview" || list.Items[0].GetKind() != k.Name {
			t.Errorf("%s in %s: %d items, want the %s preview", k.Ref(), ns, len(list.Items), k.Name)
		}
		// Without its spec's required fields, the CRD's schema refuses it.
		bare := nsmantest.OwnerObject(k, ns, "bare")
		bare.Object["spec"] = map[string]any{}
		if _, err := client.Create(t.Context(), bare, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("create %s with an empty spec: %v, want Invalid (the project's schema)", k.Name, err)
		}
	}
}

// Under the shipped RBAC (deploy/base/rbac.yaml), nsman's ServiceAccount
// lists each owner kind cluster-wide and reads one by name, and may not
// delete one (reading only); cluster.Permissions holds what it used.
func TestNsmanReadsEachOwnerKind(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	ns := shared.Namespace(t)
	cfg, err := shared.ServiceAccountConfig(t.Context(), nsmantest.ServiceAccountNamespace, nsmantest.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range owner.Kinds() {
		if _, err := e.Dynamic.Resource(k.Resource).Namespace(ns).Create(t.Context(), nsmantest.OwnerObject(k, ns, "preview"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", k.Name, err)
		}
		list, err := sa.Resource(k.Resource).List(t.Context(), metav1.ListOptions{Limit: 500})
		if err != nil {
			t.Fatalf("list %s as nsman: %v", k.Ref(), err)
		}
		if !slices.ContainsFunc(list.Items, func(o unstructured.Unstructured) bool { return o.GetNamespace() == ns && o.GetName() == "preview" }) {
			t.Errorf("list %s as nsman: no %s/preview among %d items", k.Ref(), ns, len(list.Items))
		}
		if _, err := sa.Resource(k.Resource).Namespace(ns).Get(t.Context(), "preview", metav1.GetOptions{}); err != nil {
			t.Errorf("get %s %s/preview as nsman: %v", k.Ref(), ns, err)
		}
		if err := sa.Resource(k.Resource).Namespace(ns).Delete(t.Context(), "preview", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("delete %s %s/preview as nsman: %v, want Forbidden", k.Ref(), ns, err)
		}
	}
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	permitted := map[string]bool{}
	for _, p := range nsmancluster.Permissions {
		permitted[p.Verb+" "+p.Group+"/"+p.Resource] = true
	}
	seen := map[string]bool{}
	for _, r := range after[len(before):] {
		if !slices.ContainsFunc(owner.Kinds(), func(k owner.Kind) bool { return k.Resource.Group == r.APIGroup && k.Resource.Resource == r.Resource }) {
			continue // another test's sweep as nsman
		}
		grant := r.Verb + " " + r.APIGroup + "/" + r.Resource
		seen[grant] = true
		if allowed := r.Code != 403; permitted[grant] != allowed || allowed != (r.Verb != "delete") {
			t.Errorf("%s: in cluster.Permissions %v", r, permitted[grant])
		}
	}
	for _, p := range owner.Permissions() {
		if grant := p.Verb + " " + p.Group + "/" + p.Resource; !seen[grant] {
			t.Errorf("the audit log holds no %s as nsman", grant)
		}
	}
}
