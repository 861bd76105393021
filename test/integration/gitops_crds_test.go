package integration

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
