package integration

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/cmd"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
)

// holder returns a kubeconfig for a ServiceAccount granted rules alone, as
// a ClusterRole bound cluster-wide, the way a team's user would hold a
// namespace it may patch and nothing else.
func holder(t *testing.T, ns string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	name := "holder-" + ns
	if _, err := shared.Admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "holder"}},
	}
	if _, err := shared.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = shared.Admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	cfg, err := shared.ServiceAccountConfig(ctx, ns, "holder")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "holder.kubeconfig")
	if err := cluster.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func runHold(t *testing.T, kubeconfig string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cmd.Execute(t.Context(), append([]string{"hold", "--kubeconfig", kubeconfig}, args...), &out, &out)
	return code, out.String()
}

// TestHoldKeepsADueDeleteWaiting: a user allowed to patch one namespace
// and nothing else holds it with nsman hold; a due DELETE waits, its due
// time the hold's end, which --at honours; once the hold ends the next
// sweep deletes. The same user cannot hold another namespace.
func TestHoldKeepsADueDeleteWaiting(t *testing.T) {
	e := setup(t)
	ns, other := shared.Namespace(t), shared.Namespace(t)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	kubeconfig := holder(t, ns, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"patch"}})

	if code, out := runHold(t, kubeconfig, other, "--for", "1h"); code != 1 || !strings.Contains(out, "forbidden") {
		t.Errorf("holding a namespace not granted: exit %d, %q; want 1, forbidden", code, out)
	}
	if code, out := runHold(t, kubeconfig, ns, "--for", "4s", "--dry-run"); code != 0 || !strings.Contains(out, "would be held until") {
		t.Errorf("dry run: exit %d, %q", code, out)
	}
	if got, _ := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); got.Annotations[status.HoldAnnotation] != "" {
		t.Fatalf("a dry run wrote the hold")
	}
	if code, out := runHold(t, kubeconfig, ns, "--for", "4s"); code != 0 {
		t.Fatalf("hold: exit %d, %q", code, out)
	}
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	until, err := time.Parse(time.RFC3339, got.Annotations[status.HoldAnnotation])
	if err != nil {
		t.Fatalf("hold annotation %q: %v", got.Annotations[status.HoldAnnotation], err)
	}

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	waiting := wantState(t, res, ns, ns, report.StateWaiting)
	if !strings.Contains(waiting.Message, "namespace "+ns+" is held until") || waiting.Due == nil || !waiting.Due.Equal(until) || waiting.HeldUntil == nil {
		t.Errorf("held: %q, due %v, heldUntil %v; want the hold named and due at %v", waiting.Message, waiting.Due, waiting.HeldUntil, until)
	}
	plan := e.Sweep(t, "-l", caseLabel+"="+ns, "--dry-run", "--at", until.Add(time.Second).Format(time.RFC3339))
	wantState(t, plan, ns, ns, report.StatePlanned)

	time.Sleep(time.Until(until.Add(1100 * time.Millisecond)))
	res = e.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateFired)
	if !e.NamespaceGoneOrTerminating(t, ns) {
		t.Error("not deleted once the hold ended")
	}
}

// TestHoldsIgnoredAndManagerHolds: a hold a month ahead (over --max-hold)
// or unparseable is ignored, said in the message, counted, and warned of
// by one Event; a hold on the manager, written by a user who may patch
// managers in that namespace only, holds that manager; a namespace hold
// holds a rule's pair too.
func TestHoldsIgnoredAndManagerHolds(t *testing.T) {
	e := setup(t)
	far, bad, own := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := far
	month := time.Now().Add(31 * 24 * time.Hour).UTC().Format(time.RFC3339)
	for ns, value := range map[string]string{far: month, bad: "next tuesday"} {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, status.HoldAnnotation, value)
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createManager(t, managerObj(far, far, caseID, []any{ttlPolicy("in an hour", 3600, deleteAction)}))
	createManager(t, managerObj(bad, bad, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	createManager(t, managerObj(own, own, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	kubeconfig := holder(t, own, rbacv1.PolicyRule{APIGroups: []string{"k8s.consol.de"}, Resources: []string{"namespacemanagers"}, ResourceNames: []string{own}, Verbs: []string{"patch"}})
	if code, out := runHold(t, kubeconfig, own, "--manager", own, "--for", "1h"); code != 0 {
		t.Fatalf("hold the manager: exit %d, %q", code, out)
	}

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	if w := wantState(t, res, far, far, report.StateWaiting); !strings.Contains(w.HoldIgnored, "more than --max-hold") || !strings.Contains(w.Message, "hold ignored") {
		t.Errorf("far hold: %+v", w)
	}
	if f := wantState(t, res, bad, bad, report.StateFired); !strings.Contains(f.HoldIgnored, "not an RFC 3339 time") {
		t.Errorf("unparseable hold: %+v", f)
	}
	if w := wantState(t, res, own, own, report.StateWaiting); !strings.Contains(w.Message, "manager "+own+"/"+own+" is held until") {
		t.Errorf("manager hold: %q", w.Message)
	}
	warnings := func() int {
		list, err := shared.Admin.EventsV1().Events(far).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=HoldIgnored"})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	if n := warnings(); n != 1 {
		t.Errorf("%d HoldIgnored Events, want 1", n)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	if n := warnings(); n != 1 {
		t.Errorf("%d HoldIgnored Events after a second sweep, want still 1", n)
	}
	if code, out := runHold(t, kubeconfig, own, "--manager", own, "--release"); code != 0 {
		t.Fatalf("release: exit %d, %q", code, out)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantState(t, res, own, own, report.StateFired)

	// A rule's pair waits on its namespace's hold.
	home := shared.Namespace(t)
	target := labelled(t, home, 1)[0]
	hold := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, status.HoldAnnotation, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), target, types.MergePatchType, []byte(hold), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(home, "held-rule", home, []any{ttlPolicy("delete at once", 0, deleteAction)}, selecting(home)))
	// A rule whose own hold is ignored says so on the rule, once, and
	// writes nothing on the namespaces it waits on.
	loose := labelled(t, "bad-"+home, 1)[0]
	createManager(t, managerObj(home, "badly-held-rule", home, []any{ttlPolicy("in an hour", 3600, deleteAction)}, selecting("bad-"+home)))
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"soon"}}}`, status.HoldAnnotation)
	if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Patch(t.Context(), "badly-held-rule", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	if p := res.Pair(t, home, "held-rule", target); p.State != report.StateWaiting || p.HeldUntil == nil {
		t.Errorf("held pair: %q (%s)", p.State, p.Message)
	}
	if p := res.Pair(t, home, "badly-held-rule", loose); p.State != report.StateWaiting || p.HoldIgnored != "" {
		t.Errorf("pair of a rule with an ignored hold: %+v", p)
	}
	rule := e.Manager(t, home, "badly-held-rule")
	if st, _ := pairRecord(t, loose, rule.GetUID()); st.Rule != "" {
		t.Errorf("the rule's ignored hold was recorded on namespace %s: %+v", loose, st)
	}
	if st := managerStatus(t, home, "badly-held-rule"); !strings.Contains(st.IgnoredHold, "not an RFC 3339 time") {
		t.Errorf("rule status ignoredHold %q", st.IgnoredHold)
	}
	e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	list, err := shared.Admin.EventsV1().Events(home).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=HoldIgnored,regarding.name=badly-held-rule"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("%d HoldIgnored Events on the rule after two sweeps, want 1", len(list.Items))
	}
}
