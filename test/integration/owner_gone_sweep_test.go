package integration

import (
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// ownerGonePolicy is an OWNER_GONE condition of grace seconds.
func ownerGonePolicy(name string, grace int64, action map[string]any) map[string]any {
	return map[string]any{"name": name, "action": action,
		"condition": map[string]any{"type": policy.ConditionOwnerGone, "params": map[string]any{"graceSeconds": grace}}}
}

// TestOwnerGoneDeletesWhatItsOwnerLeft plays the preview environments of
// a GitOps tool on Argo CD's and Flux's own CRDs: a rule over them with
// OWNER_GONE (grace 0) and DELETE. A namespace whose Application still
// exists, or that names no owner, or whose marker does not parse or names
// a kind that does not exist, is never deleted, and its entry says why; once
// the Application (named by its tracking id, or that made the namespace
// with CreateNamespace and is remembered) and the Flux Kustomization are
// deleted, the next sweep deletes their namespaces, each entry naming the
// owner. A dry run writes nothing. With a grace, the time it went is
// recorded once, and the DELETE waits for it.
func TestOwnerGoneDeletesWhatItsOwnerLeft(t *testing.T) {
	e := setup(t)
	ctx, home, argo, rd := onGitOpsCRDs(t, e)
	admin := e.Dynamic
	caseID := home
	kinds := map[string]owner.Kind{}
	for _, k := range owner.Kinds() {
		kinds[k.Name] = k
	}
	create := func(k owner.Kind, namespace, name string, mutate func(*unstructured.Unstructured)) {
		t.Helper()
		createOwner(ctx, t, admin, k, namespace, name, mutate)
	}
	remove := func(k owner.Kind, namespace, name string) {
		t.Helper()
		if err := admin.Resource(k.Resource).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(labels, annotations map[string]string) string {
		t.Helper()
		return markedNamespace(t, rd, labels, annotations).Name
	}
	const tracking = "argocd.argoproj.io/tracking-id"
	kept := mark(nil, map[string]string{tracking: "kept:/Namespace:NS/NS"})
	tracked := mark(nil, map[string]string{tracking: "tracked:/Namespace:NS/NS"})
	kustomized := mark(map[string]string{"kustomize.toolkit.fluxcd.io/name": "pr-k", "kustomize.toolkit.fluxcd.io/namespace": home}, nil)
	created := mark(nil, nil)
	unowned := mark(nil, nil)
	garbled := mark(nil, map[string]string{tracking: "not a tracking id"})
	nowhere := mark(nil, map[string]string{policy.OwnerAnnotation: "gizmos.example.com/" + home + "/g"})
	graced := mark(nil, map[string]string{tracking: "graced:/Namespace:NS/NS"})
	for _, name := range []string{"kept", "tracked", "graced"} {
		create(kinds["Application"], argo, name, nil)
	}
	create(kinds["Application"], argo, "creates", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, created, "spec", "destination", "namespace")
		_ = unstructured.SetNestedStringSlice(o.Object, []string{"CreateNamespace=true"}, "spec", "syncPolicy", "syncOptions")
	})
	create(kinds["Kustomization"], home, "pr-k", nil)
	createManager(t, managerObj(home, "orphans", caseID, []any{ownerGonePolicy("owner gone", 0, deleteAction)},
		patterns(kept, tracked, kustomized, created, unowned, garbled, nowhere)))
	createManager(t, managerObj(home, "graced", caseID, []any{ownerGonePolicy("owner gone an hour", 3600, deleteAction)}, patterns(graced)))
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--argocd-namespace", argo}

	// Every owner there: nothing is due; the entries name the owners.
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	owners := map[string]string{
		kept: "applications.argoproj.io/" + argo + "/kept", tracked: "applications.argoproj.io/" + argo + "/tracked",
		kustomized: "kustomizations.kustomize.toolkit.fluxcd.io/" + home + "/pr-k", created: "applications.argoproj.io/" + argo + "/creates",
	}
	for ns, ref := range owners {
		if p := res.Pair(t, home, "orphans", ns); p.State != report.StateWaiting || p.Owner != ref {
			t.Errorf("namespace %s, its owner there: %s, owner %q (%s); want waiting, owner %s", ns, p.State, p.Owner, p.Message, ref)
		}
	}
	for ns, why := range map[string]string{unowned: "no owner", garbled: "tracking", nowhere: "names a kind that does not exist"} {
		if p := res.Pair(t, home, "orphans", ns); p.State != report.StateWaiting || !strings.Contains(p.Message, why) {
			t.Errorf("namespace %s: %s (%s); want waiting, saying %q", ns, p.State, p.Message, why)
		}
	}

	// The owners go.
	remove(kinds["Application"], argo, "tracked")
	remove(kinds["Application"], argo, "creates")
	remove(kinds["Application"], argo, "graced")
	remove(kinds["Kustomization"], home, "pr-k")
	delete(owners, kept)
	before := len(e.Writes(t))
	dry := e.Sweep(t, append(args, "--dry-run")...)
	wantCode(t, dry, 0)
	for ns := range owners {
		if p := dry.Pair(t, home, "orphans", ns); p.State != report.StatePlanned {
			t.Errorf("dry run, namespace %s, its owner gone: %s (%s); want planned", ns, p.State, p.Message)
		}
	}
	if writes := e.Writes(t)[before:]; len(writes) != 0 {
		t.Errorf("a dry run wrote %d times: %v", len(writes), writes)
	}

	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	for ns, ref := range owners {
		if p := res.Pair(t, home, "orphans", ns); p.State != report.StateFired || p.Owner != ref || !e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s, its owner %s gone: %s, owner %q (%s); want it fired and deleted", ns, ref, p.State, p.Owner, p.Message)
		}
	}
	for _, ns := range []string{kept, unowned, garbled, nowhere} {
		if e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("namespace %s deleted: its owner is there, or it names none nsman can read", ns)
		}
	}
	g := res.Pair(t, home, "graced", graced)
	if g.State != report.StateWaiting || g.Due == nil || time.Until(*g.Due) < 50*time.Minute || e.NamespaceGoneOrTerminating(t, graced) {
		t.Fatalf("graced: %s, due %v (%s); want waiting for an hour", g.State, g.Due, g.Message)
	}
	first := *g.Due

	// The time it went is kept: the next sweep waits for the same moment.
	again := e.Sweep(t, args...)
	wantCode(t, again, 0)
	if g := again.Pair(t, home, "graced", graced); g.Due == nil || !g.Due.Equal(first) {
		t.Errorf("graced, a sweep later: due %v, want %v still", g.Due, first)
	}
	states := map[report.State]int{}
	for _, entry := range again.Report.Entries {
		if entry.Rule && entry.Name == "orphans" {
			states[entry.State]++
		}
	}
	if want := map[report.State]int{report.StateWaiting: 4}; !maps.Equal(states, want) {
		t.Errorf("the rule's namespaces a sweep later: %v, want %v", states, want)
	}
}
