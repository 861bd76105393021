package doctor

import (
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/owner"
)

// ownerCluster is a fake cluster that serves the owner kinds named in
// served and answers a self review with whether listable names the
// resource; a SubjectAccessReview is forbidden.
func ownerCluster(served, listable []string) (*fake.Clientset, *[]string) {
	kube := fake.NewClientset()
	disco := kube.Discovery().(*fakediscovery.FakeDiscovery)
	for _, k := range owner.Kinds() {
		for _, s := range served {
			if s == k.Name {
				disco.Resources = append(disco.Resources, &metav1.APIResourceList{
					GroupVersion: k.Resource.GroupVersion().String(),
					APIResources: []metav1.APIResource{{Name: k.Resource.Resource, Namespaced: true, Kind: k.Name, Verbs: metav1.Verbs{"get", "list"}}},
				})
			}
		}
	}
	var asked []string
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attrs := r.Spec.ResourceAttributes
		asked = append(asked, attrs.Verb+" "+attrs.Resource)
		for _, l := range listable {
			r.Status.Allowed = r.Status.Allowed || (attrs.Verb == "list" && attrs.Resource == l)
		}
		return true, r, nil
	})
	kube.PrependReactor("create", "subjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(authorizationv1.Resource("subjectaccessreviews"), "", errors.New("no"))
	})
	return kube, &asked
}

func wantCheck(t *testing.T, c Check, status Status, words ...string) {
	t.Helper()
	all := c.Message + "\n" + strings.Join(c.Details, "\n")
	if c.Status != status {
		t.Errorf("%s (%s), want %s", c.Status, all, status)
	}
	for _, w := range words {
		if !strings.Contains(all, w) {
			t.Errorf("%q does not say %q", all, w)
		}
	}
	if (status != OK) != (c.Fix != "") {
		t.Errorf("%s with fix %q", c.Status, c.Fix)
	}
}

// Owner kinds not installed are said so, and are no fault: nothing is
// reviewed of them.
func TestOwnerKindsNotInstalled(t *testing.T) {
	kube, asked := ownerCluster(nil, nil)
	c := ownerKinds(t.Context(), kube, "", true)
	wantCheck(t, c, OK, "not installed: Application, Kustomization, HelmRelease", "Application (applications.argoproj.io/v1alpha1): not installed")
	if len(*asked) > 0 {
		t.Errorf("reviewed %q of kinds not served", *asked)
	}
	// Nothing reviewed, nothing said of the caller's permissions.
	wantCheck(t, ownerKinds(t.Context(), kube, "", false), OK, "not installed: Application, Kustomization, HelmRelease")
}

// A kind served that nsman may not list is a warning naming it, with the
// fix; one it may list is seen; one not served is said so.
func TestOwnerKindsServedButNotListable(t *testing.T) {
	kube, asked := ownerCluster([]string{"Application", "Kustomization"}, []string{"applications"})
	c := ownerKinds(t.Context(), kube, "", true)
	wantCheck(t, c, Warning, "you can see Application", "you cannot see Kustomization", "not installed: HelmRelease",
		"Kustomization (kustomizations.kustomize.toolkit.fluxcd.io/v1): served, but you may not list it")
	if !strings.Contains(c.Fix, "get and list") {
		t.Errorf("fix %q does not say what to grant", c.Fix)
	}
	if want := "list applications,delete applications,list kustomizations"; strings.Join(*asked, ",") != want {
		t.Errorf("reviewed %q, want %q", *asked, want)
	}
	kube, _ = ownerCluster([]string{"Application", "Kustomization", "HelmRelease"}, []string{"applications", "kustomizations", "helmreleases"})
	wantCheck(t, ownerKinds(t.Context(), kube, "", true), OK, "you can see Application, Kustomization, HelmRelease")
}

// Of a kind nsman may list, whether it may also delete it is said, which
// only a DELETE via owner needs: no fault either way, the grant named.
func TestOwnerKindsSayWhetherDeleteViaOwnerMay(t *testing.T) {
	kube, _ := ownerCluster([]string{"Application"}, []string{"applications"})
	wantCheck(t, ownerKinds(t.Context(), kube, "", true), OK,
		"Application (applications.argoproj.io/v1alpha1): served, and you may list it; you may not delete it: a DELETE via owner fails until granted ("+owner.DeleteGrant+")")
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	wantCheck(t, ownerKinds(t.Context(), kube, "", true), OK, "you may list it; you may delete it (DELETE via owner)")
}

// Outside nsman's pod, the answers are the caller's: about the installed
// ServiceAccount when the caller may ask, else its own, said so.
func TestOwnerKindsAsTheCaller(t *testing.T) {
	kube, _ := ownerCluster([]string{"Application", "Kustomization", "HelmRelease"}, []string{"applications", "kustomizations", "helmreleases"})
	c := ownerKinds(t.Context(), kube, "nsman/nsman", false)
	wantCheck(t, c, Warning, "you can see Application, Kustomization, HelmRelease", "you may not create subjectaccessreviews: these are your own permissions, not ServiceAccount nsman/nsman's")
	if c.Fix != notNsmanFix {
		t.Errorf("fix %q, want %q", c.Fix, notNsmanFix)
	}
}

// Discovery that fails is a warning that says so, not a kind not installed.
func TestOwnerKindsDiscoveryFails(t *testing.T) {
	kube, _ := ownerCluster(nil, nil)
	kube.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd")
	})
	wantCheck(t, ownerKinds(t.Context(), kube, "", true), Warning, "could not tell of Application, Kustomization, HelmRelease", "whether it is served could not be told")
}
