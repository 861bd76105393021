package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/explain"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// explainIn runs nsman explain namespace as admin, Argo CD's namespace
// argoCD, with -o json (its report decoded) or as text.
func explainIn(t *testing.T, namespace, argoCD string, asJSON bool) (explain.Report, string) {
	t.Helper()
	args := []string{"explain", namespace, "--argocd-namespace", argoCD, "--kubeconfig", shared.Kubeconfig}
	if asJSON {
		args = append(args, "-o", "json")
	}
	var stdout, stderr bytes.Buffer
	if code := cmd.Execute(t.Context(), args, &stdout, &stderr); code != cmd.ExitOK {
		t.Fatalf("nsman %q: exit %d: %s", args, code, stderr.String())
	}
	var r explain.Report
	if asJSON {
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("nsman explain %s: not JSON (%v):\n%s", namespace, err, stdout.String())
		}
	}
	return r, stdout.String()
}

// TestExplainOwnerAndCameBack, on Argo CD's real CRD: an Active
// namespace whose tracking id names an Application is owned by it, which
// exists, then, the Application deleted, is gone; a rule whose status
// lists a DELETE of a namespace of its name before it was made says it
// came back (a DELETE after it was made does not), and the text report
// says what deletes it for good while its owner exists.
func TestExplainOwnerAndCameBack(t *testing.T) {
	e := setup(t)
	ctx, rules, argoCD, rd := onGitOpsCRDs(t, e)
	admin := e.Dynamic
	ns := markedNamespace(t, rd, nil, map[string]string{"argocd.argoproj.io/tracking-id": "pr-app:/Namespace:NS/NS"})
	apps := ownerKind(t, "Application")
	createOwner(ctx, t, admin, apps, argoCD, "pr-app", nil)

	// A rule over the namespace's name, whose status, written as a sweep
	// writes it, lists a DELETE of it an hour before it was made, and
	// one a minute after (of this namespace itself: no coming back).
	before, after := ns.Created.Add(-time.Hour).UTC().Truncate(time.Second), ns.Created.Add(time.Minute).UTC().Truncate(time.Second)
	createManager(t, managerObj(rules, "previews", rules, []any{ttlPolicy("ttl", 3600, deleteAction)}, func(spec map[string]any) { spec["namePatterns"] = []any{ns.Name} }))
	latest := []status.PairAction{
		{Namespace: ns.Name, Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: after},
		{Namespace: ns.Name, Policy: "ttl", Action: "DELETE", Result: report.ResultSucceeded, Time: before},
	}
	patch, err := json.Marshal(map[string]any{"status": status.Status{Rule: &status.RuleSummary{Matched: 1, Latest: latest}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(rules).Patch(ctx, "previews", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}

	r, _ := explainIn(t, ns.Name, argoCD, true)
	wantOwner := explain.Owner{Ref: "applications.argoproj.io/" + argoCD + "/pr-app", By: "argocd.argoproj.io/tracking-id", Presence: explain.OwnerExists}
	if r.Owner == nil || *r.Owner != wantOwner {
		t.Fatalf("owner %+v, want %+v (unlisted %+v)", r.Owner, wantOwner, r.Unlisted)
	}
	wantBack := explain.CameBack{Rule: rules + "/previews", Policy: "ttl", Action: "DELETE", Deleted: before}
	if len(r.CameBack) != 1 || r.CameBack[0].Rule != wantBack.Rule || !r.CameBack[0].Deleted.Equal(before) || r.CameBack[0].Policy != "ttl" {
		t.Fatalf("came back %+v, want [%+v] (unlisted %+v)", r.CameBack, wantBack, r.Unlisted)
	}
	if _, text := explainIn(t, ns.Name, argoCD, false); !strings.Contains(text, "came back: made again at "+ns.Created.UTC().Format(time.RFC3339)+" after rule "+rules+"/previews deleted it at "+before.Format(time.RFC3339)+" (policy ttl)\n") ||
		!strings.Contains(text, "may have made it again: a DELETE with params: {via: owner}") {
		t.Errorf("the text report:\n%s", text)
	}

	if err := admin.Resource(apps.Resource).Namespace(argoCD).Delete(ctx, "pr-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r, _ = explainIn(t, ns.Name, argoCD, true)
	if wantOwner.Presence = explain.OwnerGone; r.Owner == nil || *r.Owner != wantOwner {
		t.Fatalf("owner %+v, want %+v", r.Owner, wantOwner)
	}
	if _, text := explainIn(t, ns.Name, argoCD, false); strings.Contains(text, "may have made it again") || !strings.Contains(text, "came back: ") {
		t.Errorf("an owner gone, and the report says it may have made it again:\n%s", text)
	}
}
