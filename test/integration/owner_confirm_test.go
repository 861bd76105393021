package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// An OWNER_GONE policy that would act on the sweep's list of an owner kind
// gets its owner by name first, on Argo CD's own CRD: once for the
// namespace whose owner is gone, never for the one whose owner exists; a
// dry run too, writing nothing; then the real sweep deletes the namespace
// whose owner went, and only it.
func TestOwnerGoneReadAgainBeforeActing(t *testing.T) {
	e := setup(t)
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	orphaned, owned := shared.Namespace(t), shared.Namespace(t)
	caseID := orphaned
	apps := owner.Kinds()[0]
	if apps.Name != "Application" {
		t.Fatalf("the first owner kind is %s, want Application", apps.Name)
	}
	// Both name an Application in their own namespace; owned's exists.
	nameOwner(t.Context(), t, shared.Admin, orphaned, owner.Ref{Resource: apps.Resource.GroupResource(), Namespace: orphaned, Name: "gone"})
	nameOwner(t.Context(), t, shared.Admin, owned, owner.Ref{Resource: apps.Resource.GroupResource(), Namespace: owned, Name: "here"})
	if _, err := e.Dynamic.Resource(apps.Resource).Namespace(owned).Create(t.Context(), nsmantest.OwnerObject(apps, owned, "here"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{orphaned, owned} {
		createManager(t, managerObj(ns, ns, caseID, []any{ownerGonePolicy("delete once the owner went", 0, deleteAction)}))
	}
	// gets are the Applications in this test's namespaces nsman read by
	// name since the audit log held before requests.
	gets := func(before int) []cluster.Request {
		t.Helper()
		reqs, err := shared.AuditedRequests(t.Context(), e.User)
		if err != nil {
			t.Fatal(err)
		}
		var out []cluster.Request
		for _, r := range reqs[before:] {
			if r.Verb == "get" && r.Resource == apps.Resource.Resource && r.APIGroup == apps.Resource.Group && (r.Namespace == orphaned || r.Namespace == owned) {
				out = append(out, r)
			}
		}
		return out
	}
	audited := func() int {
		t.Helper()
		reqs, err := shared.AuditedRequests(t.Context(), e.User)
		if err != nil {
			t.Fatal(err)
		}
		return len(reqs)
	}
	wantOneGet := func(sweep string, got []cluster.Request) {
		t.Helper()
		if len(got) != 1 || got[0].Namespace != orphaned || got[0].Name != "gone" || got[0].Code != 404 {
			t.Errorf("%s read Applications by name: %v; want one get of %s/gone, not found", sweep, got, orphaned)
		}
	}

	before, writes := audited(), len(e.Writes(t))
	dry := e.Sweep(t, "-l", caseLabel+"="+caseID, "--dry-run")
	wantCode(t, dry, 0)
	wantState(t, dry, orphaned, orphaned, report.StatePlanned)
	wantState(t, dry, owned, owned, report.StateWaiting)
	wantOneGet("the dry run", gets(before))
	if w := e.Writes(t)[writes:]; len(w) > 0 {
		t.Fatalf("dry run wrote:\n%v", w)
	}

	before = audited()
	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	wantOwnerGoneFired(t, wantState(t, res, orphaned, orphaned, report.StateFired))
	wantState(t, res, owned, owned, report.StateWaiting)
	wantOneGet("the sweep", gets(before))
	if !e.NamespaceGoneOrTerminating(t, orphaned) || e.NamespaceGoneOrTerminating(t, owned) {
		t.Errorf("after the sweep: %s gone %t, %s gone %t; want only the first", orphaned, e.NamespaceGoneOrTerminating(t, orphaned), owned, e.NamespaceGoneOrTerminating(t, owned))
	}
}
