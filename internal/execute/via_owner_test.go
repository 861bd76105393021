package execute

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

const (
	appRef  = "applications.argoproj.io/argocd/pr-12"
	appPath = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/pr-12"
	ksRef   = "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-12"
	ksPath  = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/pr-12"
)

// ownerServer answers a GET of each path with its status and body, and
// 404 naming nothing else.
func ownerServer(t *testing.T, answers map[string][2]string) kubernetes.Interface {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		a, ok := answers[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		code := http.StatusOK
		_, _ = fmt.Sscan(a[0], &code)
		w.WriteHeader(code)
		_, _ = fmt.Fprint(w, a[1])
	}))
	t.Cleanup(ts.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// app is Application argocd/pr-12 with uid app-uid deploying to
// namespace dest, being deleted when deleting.
func app(dest string, deleting bool) [2]string {
	ts := ""
	if deleting {
		ts = `,"deletionTimestamp":"2026-11-28T07:59:00Z"`
	}
	return [2]string{"200", fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"pr-12","namespace":"argocd","uid":"app-uid"%s},"spec":{"destination":{"namespace":%q,"server":"https://kubernetes.default.svc"},"source":{"repoURL":"x"}}}`, ts, dest)}
}

// goneByName is the API server's 404 for an object it names.
func goneByName(name string) [2]string {
	return [2]string{"404", fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"details":{"name":%q,"group":"argoproj.io","kind":"applications"}}`, name)}
}

// viaOwner makes the policy a DELETE via owner whose plan names owner.
func viaOwner(owner *policy.Owner) func(*decide.Decision) {
	return func(d *decide.Decision) {
		d.Plan.Policy.Action.Via = policy.ViaOwner
		d.Plan.Owner = owner
	}
}

// A DELETE via owner whose owner exists deletes the owner, read by name,
// with its UID, only when the owner deploys to the namespace: the
// namespace stays, and the policy is not done, so that a later sweep
// deletes it once the owner is gone. An owner gone, or none, is the plain
// DELETE; one that cannot be read, or is being deleted, waits; one of a
// kind nsman does not delete through, or that deploys elsewhere, fails.
func TestDeleteViaOwner(t *testing.T) {
	present := &policy.Owner{Ref: appRef, By: "argocd.argoproj.io/tracking-id", Presence: policy.OwnerPresent}
	gone := &policy.Owner{Ref: appRef, By: "argocd.argoproj.io/tracking-id", Presence: policy.OwnerGone}
	unknown := &policy.Owner{Ref: appRef, By: "argocd.argoproj.io/tracking-id", Why: "applications.argoproj.io is not served"}
	flux := &policy.Owner{Ref: ksRef, By: "kustomize.toolkit.fluxcd.io/name", Presence: policy.OwnerPresent}
	fluxLabelled := listedTeamA
	fluxLabelled.Labels = cluster.PackLabels("team-a", map[string]string{"kustomize.toolkit.fluxcd.io/name": "pr-12", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, "pr-12", fmt.Errorf("no"))
	tests := []struct {
		name         string
		owner        *policy.Owner
		listed       *cluster.Namespace
		answers      map[string][2]string
		ownerErr     error
		state        report.State
		msg          string
		ownerDeletes []string
		nsDeletes    int
		done         bool
	}{
		{name: "present, deploys here: the owner goes first", owner: present, answers: map[string][2]string{appPath: app("team-a", false)},
			state: report.StateFired, msg: "owner " + appRef + " deleted; namespace team-a follows once it is gone", ownerDeletes: []string{"applications/argocd/pr-12@app-uid"}},
		{name: "present by the list, gone by name: the namespace", owner: present, answers: map[string][2]string{appPath: goneByName("pr-12")},
			state: report.StateFired, nsDeletes: 1, done: true},
		{name: "gone: the namespace", owner: gone, state: report.StateFired, nsDeletes: 1, done: true},
		{name: "no owner: the namespace", state: report.StateFired, nsDeletes: 1, done: true},
		{name: "being deleted: waits", owner: present, answers: map[string][2]string{appPath: app("team-a", true)},
			state: report.StateWaiting, msg: "owner " + appRef + " is being deleted; namespace team-a follows once it is gone"},
		{name: "unknown: waits", owner: unknown, state: report.StateWaiting, msg: "cannot be read (applications.argoproj.io is not served)"},
		{name: "not served: waits", owner: present, answers: map[string][2]string{}, state: report.StateWaiting, msg: "cannot be read"},
		{name: "deploys elsewhere: fails", owner: present, answers: map[string][2]string{appPath: app("team-b", false)},
			state: report.StateFailed, msg: "owner " + appRef + " does not deploy to namespace team-a: nsman deletes through no owner that does not"},
		{name: "not an owner kind: fails", owner: &policy.Owner{Ref: "deployments.apps/team-b/web", By: policy.OwnerAnnotation, Presence: policy.OwnerPresent},
			state: report.StateFailed, msg: "via owner deletes through those kinds only"},
		{name: "no grant: fails naming it", owner: present, answers: map[string][2]string{appPath: app("team-a", false)}, ownerErr: forbidden,
			state: report.StateFailed, msg: owner.DeleteGrant, ownerDeletes: []string{"applications/argocd/pr-12@app-uid"}},
		{name: "Kustomization whose labels the namespace carries", owner: flux, listed: &fluxLabelled,
			answers: map[string][2]string{ksPath: {"200", `{"metadata":{"name":"pr-12","namespace":"flux-system","uid":"ks-uid"},"spec":{"path":"./x"}}`}},
			state:   report.StateFired, msg: "deleted", ownerDeletes: []string{"kustomizations/flux-system/pr-12@ks-uid"}},
		{name: "Kustomization whose targetNamespace is the namespace", owner: flux,
			answers: map[string][2]string{ksPath: {"200", `{"metadata":{"name":"pr-12","namespace":"flux-system","uid":"ks-uid"},"spec":{"targetNamespace":"team-a"}}`}},
			state:   report.StateFired, msg: "deleted", ownerDeletes: []string{"kustomizations/flux-system/pr-12@ks-uid"}},
		{name: "Kustomization of another namespace: fails", owner: flux,
			answers: map[string][2]string{ksPath: {"200", `{"metadata":{"name":"pr-12","namespace":"flux-system","uid":"ks-uid"},"spec":{"targetNamespace":"team-b"}}`}},
			state:   report.StateFailed, msg: "does not deploy to namespace team-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.done, w.ownerErr = report.StateFired, tt.ownerErr
			reads := emptyReader(t)
			reads.Clients.Kube = ownerServer(t, tt.answers)
			x := newExecutor(t, w, reads)
			d := decision(viaOwner(tt.owner), notHome)
			if tt.listed != nil {
				d.Plan.Target.Listed = *tt.listed
			}
			rec := &fakeRecord{}
			e, _, _ := x.act(t.Context(), rec, d)
			if e.State != tt.state || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("entry %s %q, want %s containing %q", e.State, e.Message, tt.state, tt.msg)
			}
			if e.TargetStays != (tt.nsDeletes == 0 && tt.state != report.StateFailed) {
				t.Errorf("entry's TargetStays %t, with %d namespaces deleted", e.TargetStays, tt.nsDeletes)
			}
			if !slices.Equal(w.ownerDeletes, tt.ownerDeletes) || len(w.deletes) != tt.nsDeletes {
				t.Errorf("owners deleted %v, namespaces %v; want %v and %d", w.ownerDeletes, w.deletes, tt.ownerDeletes, tt.nsDeletes)
			}
			if len(rec.writes) != 1 {
				t.Fatalf("%d records written, want 1", len(rec.writes))
			}
			if o := rec.writes[0]; o.Done != tt.done || (o.Last != nil) != (tt.done || tt.state == report.StateFailed) {
				t.Errorf("recorded done %t, last %+v; want done %t", o.Done, o.Last, tt.done)
			}
		})
	}
}

// In a dry run a DELETE via owner deletes nothing and plans the owner's
// deletion, naming it.
func TestDeleteViaOwnerDryRun(t *testing.T) {
	w := newFakeWriter()
	reads := emptyReader(t)
	reads.Clients.Kube = ownerServer(t, map[string][2]string{appPath: app("team-a", false)})
	x := newExecutor(t, w, reads)
	rec := &fakeRecord{}
	e, _, _ := x.act(t.Context(), rec, decision(viaOwner(&policy.Owner{Ref: appRef, Presence: policy.OwnerPresent}), notHome))
	if e.State != report.StatePlanned || !slices.Equal(e.Effects, []string{"delete Application argocd/pr-12 (foreground)"}) || len(w.deletes) != 0 {
		t.Errorf("entry %s %v (%s), namespaces deleted %v; want planned, deleting the Application alone", e.State, e.Effects, e.Message, w.deletes)
	}
	if len(rec.writes) != 1 || rec.writes[0].Done || rec.writes[0].Last != nil {
		t.Errorf("records %+v, want one, not done", rec.writes)
	}
}
