package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// deleteViaOwner is a DELETE through the namespace's owner.
var deleteViaOwner = map[string]any{"type": "DELETE", "params": map[string]any{"via": policy.ViaOwner}}

// grantNsman binds to nsman's ServiceAccount, for t, a ClusterRole named
// name of rules, as a component grants more than deploy/base does
// (owner-delete: delete of the owner kinds; flux-suspend: list and patch
// of HelmReleases).
func grantNsman(t *testing.T, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	bindClusterRole(t.Context(), t, name, rbacv1.Subject{Kind: "ServiceAccount", Name: nsmantest.ServiceAccountName, Namespace: nsmantest.ServiceAccountNamespace}, rules...)
}

// application is Application namespace/name deploying to dest, with
// finalizers.
func application(namespace, name, dest string, finalizers ...string) *unstructured.Unstructured {
	app := nsmantest.OwnerObject(owner.Kinds()[0], namespace, name)
	_ = unstructured.SetNestedField(app.Object, dest, "spec", "destination", "namespace")
	if len(finalizers) > 0 {
		app.SetFinalizers(finalizers)
	}
	return app
}

// The admission policy lets nsman's ServiceAccount delete an owner only
// when it deploys to a namespace nsman does not protect, and nothing but
// namespaces and owners, whatever RBAC grants it: on Argo CD's own CRD.
func TestAdmissionPolicyFencesOwnerDeletes(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	ctx := t.Context()
	tenant := shared.Namespace(t)
	apps := owner.Kinds()[0]
	grantNsman(t, "nsman-fence-"+tenant,
		rbacv1.PolicyRule{APIGroups: []string{apps.Resource.Group}, Resources: []string{apps.Resource.Resource}, Verbs: []string{"delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}})
	for _, app := range []*unstructured.Unstructured{application(tenant, "to-tenant", tenant), application(tenant, "to-system", "kube-system")} {
		if _, err := e.Dynamic.Resource(apps.Resource).Namespace(tenant).Create(ctx, app, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := shared.Admin.CoreV1().ConfigMaps(tenant).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, kube := saDynamic(t, e.Kubeconfig), saClient(t, e.Kubeconfig)
	dry := metav1.DeleteOptions{DryRun: dryRun}
	if err := sa.Resource(apps.Resource).Namespace(tenant).Delete(ctx, "to-tenant", dry); err != nil {
		t.Errorf("delete of an Application deploying to %s: %v, want it allowed", tenant, err)
	}
	deniedBy(t, sa.Resource(apps.Resource).Namespace(tenant).Delete(ctx, "to-system", dry), nsmantest.AdmissionPolicy,
		"nsman may not delete Application "+tenant+"/to-system: it deploys to namespace kube-system, which is protected")
	deniedBy(t, kube.CoreV1().ConfigMaps(tenant).Delete(ctx, "settings", dry), nsmantest.AdmissionPolicy,
		"nsman may delete only namespaces, and the Applications, Kustomizations and HelmReleases a DELETE via owner deletes through: not ConfigMap "+tenant+"/settings")
}

// A DELETE via owner on Argo CD's own CRD: the Application that deploys to
// the namespace goes first, in one sweep, the namespace in the next once
// the Application is gone; one with a finalizer no controller removes is
// being deleted, and its namespace waits; an Application that deploys
// elsewhere fails the DELETE and nothing is deleted; without the grant it
// fails naming it; a dry run writes nothing. The manager, in the namespace
// that stays, tells of the owner's deletion in an Event.
func TestDeleteViaOwnerOnTheRealCRD(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	ctx := t.Context()
	apps := owner.Kinds()[0]
	through, finalized, elsewhere, ungranted := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := through
	for ns, app := range map[string]*unstructured.Unstructured{
		through:   application(through, "preview", through),
		finalized: application(finalized, "preview", finalized, "resources-finalizer.argocd.argoproj.io"),
		elsewhere: application(elsewhere, "preview", "somewhere-else"),
		ungranted: application(ungranted, "preview", ungranted),
	} {
		if _, err := e.Dynamic.Resource(apps.Resource).Namespace(ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		nameOwner(ctx, t, shared.Admin, ns, owner.Ref{Resource: apps.Resource.GroupResource(), Namespace: ns, Name: "preview"})
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete through the owner", 0, deleteViaOwner)}))
	}
	t.Cleanup(func() {
		// The finalizer no controller removes, so that the test's
		// namespace can go.
		_, _ = e.Dynamic.Resource(apps.Resource).Namespace(finalized).Patch(context.Background(), "preview", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	appExists := func(ns string) (exists, deleting bool) {
		t.Helper()
		app, err := e.Dynamic.Resource(apps.Resource).Namespace(ns).Get(ctx, "preview", metav1.GetOptions{})
		if err != nil {
			return false, false
		}
		return true, app.GetDeletionTimestamp() != nil
	}

	// Without the grant: failed, naming it; nothing deleted.
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "-n", ungranted)
	if en := wantState(t, res, ungranted, ungranted, report.StateFailed); !strings.Contains(en.Message, owner.DeleteGrant) {
		t.Errorf("without the grant: %q, want it to name the grant", en.Message)
	}
	if exists, _ := appExists(ungranted); !exists || e.NamespaceGoneOrTerminating(t, ungranted) {
		t.Errorf("without the grant, the Application exists %t, the namespace gone %t; want both there", exists, e.NamespaceGoneOrTerminating(t, ungranted))
	}

	grantNsman(t, "nsman-via-"+caseID, rbacv1.PolicyRule{APIGroups: []string{apps.Resource.Group}, Resources: []string{apps.Resource.Resource}, Verbs: []string{"delete"}})
	writes := len(e.Writes(t))
	dry := e.Sweep(t, "-l", caseLabel+"="+caseID, "--dry-run")
	if en := wantState(t, dry, through, through, report.StatePlanned); !strings.Contains(en.Message, "owner applications.argoproj.io/"+through+"/preview deleted; namespace "+through+" follows once it is gone") {
		t.Errorf("dry run: %q", en.Message)
	}
	if w := e.Writes(t)[writes:]; len(w) > 0 {
		t.Fatalf("dry run wrote:\n%v", w)
	}

	first := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantState(t, first, through, through, report.StateFired)
	wantState(t, first, finalized, finalized, report.StateFired)
	if en := wantState(t, first, elsewhere, elsewhere, report.StateFailed); !strings.Contains(en.Message, "does not deploy to namespace "+elsewhere) {
		t.Errorf("an Application deploying elsewhere: %q", en.Message)
	}
	for _, ns := range []string{through, finalized, elsewhere} {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted by the sweep that deleted its owner", ns)
		}
	}
	// The manager lives in the namespace, which stays: its Event tells.
	if n := sleepEvents(t, through, through, "Fired"); n != 1 {
		t.Errorf("%d Fired Events on manager %s/%s after its owner was deleted, want 1", n, through, through)
	}
	if exists, deleting := appExists(finalized); !exists || !deleting {
		t.Errorf("the Application with a finalizer: exists %t, being deleted %t; want both", exists, deleting)
	}
	if exists, _ := appExists(elsewhere); !exists {
		t.Error("the Application deploying elsewhere was deleted")
	}
	// Foreground deletion: the garbage collector removes the Application's
	// finalizer once nothing it owns is left.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if exists, _ := appExists(through); !exists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Application of %s is still there a minute after the sweep deleted it", through)
		}
	}

	second := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantState(t, second, through, through, report.StateFired)
	if en := wantState(t, second, finalized, finalized, report.StateWaiting); !strings.Contains(en.Message, "is being deleted; namespace "+finalized+" follows once it is gone") {
		t.Errorf("the namespace of an Application being deleted: %q", en.Message)
	}
	if !e.NamespaceGoneOrTerminating(t, through) || e.NamespaceGoneOrTerminating(t, finalized) {
		t.Errorf("after the second sweep: %s gone %t, %s gone %t; want only the first", through, e.NamespaceGoneOrTerminating(t, through), finalized, e.NamespaceGoneOrTerminating(t, finalized))
	}
}

// A rule's DELETE via owner goes as a manager's: the Application first,
// the namespace at the next sweep once the Application is gone; the rule's
// record on the namespace between the two says nothing was done yet.
func TestRuleDeletesViaOwner(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	ctx := t.Context()
	apps := owner.Kinds()[0]
	home := shared.Namespace(t)
	caseID := home
	target := labelled(t, caseID, 1)[0]
	if _, err := e.Dynamic.Resource(apps.Resource).Namespace(target).Create(ctx, application(target, "preview", target), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nameOwner(ctx, t, shared.Admin, target, owner.Ref{Resource: apps.Resource.GroupResource(), Namespace: target, Name: "preview"})
	grantNsman(t, "nsman-via-rule-"+caseID, rbacv1.PolicyRule{APIGroups: []string{apps.Resource.Group}, Resources: []string{apps.Resource.Resource}, Verbs: []string{"delete"}})
	createManager(t, managerObj(home, "previews", caseID, []any{ttlPolicy("delete through the owner", 0, deleteViaOwner)}, selecting(caseID)))

	first := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home)
	wantCode(t, first, 0)
	if p := first.Pair(t, home, "previews", target); p.State != report.StateFired || !strings.Contains(p.Message, "follows once it is gone") {
		t.Fatalf("first sweep: %s (%s), want fired, the owner deleted", p.State, p.Message)
	}
	if e.NamespaceGoneOrTerminating(t, target) {
		t.Fatal("the namespace went in the sweep that deleted its owner")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err := e.Dynamic.Resource(apps.Resource).Namespace(target).Get(ctx, "preview", metav1.GetOptions{}); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Application is still there a minute after the sweep deleted it")
		}
	}
	second := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home)
	wantCode(t, second, 0)
	if p := second.Pair(t, home, "previews", target); p.State != report.StateFired || !e.NamespaceGoneOrTerminating(t, target) {
		t.Errorf("second sweep: %s (%s), namespace gone %t; want it deleted", p.State, p.Message, e.NamespaceGoneOrTerminating(t, target))
	}
}
