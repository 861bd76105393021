package integration

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// grants expands the ClusterRole in deploy/base/rbac.yaml into
// "verb group/resource[/subresource]" strings.
func grants(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "base", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := nsmantest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatal(err)
		}
		maps.Copy(out, ruleGrants(t, role.Rules))
	}
	return out
}

// ruleGrants is what rules grant, as "verb group/resource"; a wildcard is
// an error.
func ruleGrants(t *testing.T, rules []rbacv1.PolicyRule) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					if v == "*" || res == "*" || g == "*" {
						t.Errorf("wildcard in the ClusterRole: %v", rule)
					}
					out[v+" "+g+"/"+res] = true
				}
			}
		}
	}
	return out
}

// wantGrantedUsed checks that reqs, a sweep's audited requests, were none
// denied and use every grant and nothing else.
func wantGrantedUsed(t *testing.T, granted map[string]bool, reqs []cluster.Request) {
	t.Helper()
	for _, r := range reqs {
		if r.Code == 403 {
			t.Errorf("denied: %s", r)
		}
	}
	got := used(reqs)
	for _, g := range slices.Sorted(maps.Keys(granted)) {
		if !got[g] {
			t.Errorf("granted but unused: %s", g)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(got)) {
		if !granted[u] {
			t.Errorf("used but not granted: %s", u)
		}
	}
}

// ownedByGone names, by policy.OwnerAnnotation, an owner of each kind
// internal/owner knows as the owner of one of namespaces, in that
// namespace, that does not exist: a sweep whose policies there weigh the
// owner lists each kind and, before acting on its going, gets it by name,
// using every permission owner.Permissions asks for.
func ownedByGone(ctx context.Context, t *testing.T, kube kubernetes.Interface, namespaces ...string) {
	t.Helper()
	kinds := owner.Kinds()
	if len(kinds) > len(namespaces) {
		t.Fatalf("%d owner kinds, %d namespaces to own: give each kind one", len(kinds), len(namespaces))
	}
	for i, k := range kinds {
		nameOwner(ctx, t, kube, namespaces[i], owner.Ref{Resource: k.Resource.GroupResource(), Namespace: namespaces[i], Name: "gone"})
	}
}

// nameOwner names ref the owner of namespace ns by policy.OwnerAnnotation.
func nameOwner(ctx context.Context, t *testing.T, kube kubernetes.Interface, ns string, ref owner.Ref) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{policy.OwnerAnnotation: ref.String()}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantOwnerGoneFired checks that entries are of subjects whose
// ownerGoneAtOnce policy fired, naming the owner gone.
func wantOwnerGoneFired(t *testing.T, entries ...report.Entry) {
	t.Helper()
	for _, e := range entries {
		if !strings.HasSuffix(e.Policy, "once the owner went") || !strings.HasSuffix(e.Owner, "/gone") {
			t.Errorf("%s/%s on %s: policy %q fired, owner %q; want the OWNER_GONE policy, on the owner gone", e.Namespace, e.Name, e.Target, e.Policy, e.Owner)
		}
	}
}

func used(reqs []cluster.Request) map[string]bool {
	out := map[string]bool{}
	for _, r := range reqs {
		res := r.APIGroup + "/" + r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		out[r.Verb+" "+res] = true
	}
	return out
}

// TestShippedRBACIsExactlyWhatASweepUses runs one sweep that deletes,
// scales down (each kind the ClusterRole names), calls a webhook, checks
// pods, writes events, acts by a rule and on owners gone (each owner kind,
// Argo CD's and Flux's CRDs installed), as the shipped ServiceAccount under
// the RBAC authorizer, then compares what it did (audit log) with what the
// ClusterRole grants: nothing unused, nothing missing, nothing denied.
func TestShippedRBACIsExactlyWhatASweepUses(t *testing.T) {
	e := setup(t)
	del, scale, hook := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := del
	recv := nsmantest.NewReceiver(t)
	labels := map[string]string{"app": "web"}
	for _, kind := range []string{"deployment", "statefulset"} {
		tmpl := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/web:1"}}},
		}
		var err error
		if kind == "deployment" {
			_, err = shared.Admin.AppsV1().Deployments(scale).Create(t.Context(), &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
			}, metav1.CreateOptions{})
		} else {
			_, err = shared.Admin.AppsV1().StatefulSets(scale).Create(t.Context(), &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// OWNER_GONE lists each owner kind, and gets the owner by name before
	// it acts: the owner kinds' CRDs are Argo CD's and Flux's own.
	nsmantest.InstallGitOpsCRDs(t, env.Dynamic)
	createManager(t, managerObj(del, del, caseID, []any{ownerGonePolicy("delete once the owner went", 0, deleteAction), ttlPolicy("delete at once", 0, deleteAction)}))
	// IDLE reads what was created in a namespace once it is old enough.
	idle := shared.Namespace(t)
	createManager(t, managerObj(idle, idle, caseID, []any{idlePolicy("idle a second", 1, deleteAction)}))
	createManager(t, managerObj(scale, scale, caseID, []any{podsPolicy("scale when no tests run", map[string]any{"component": "tests"}, map[string]any{"type": "SCALE_DOWN"})}))
	sink := recv.ServiceURL(t, shared.Admin, hook, "sink") + "/done"
	createManager(t, managerObj(hook, hook, caseID, []any{ownerGonePolicy("notify once the owner went", 0, webhookAction(sink)), ttlPolicy("notify at once", 0, webhookAction(sink))}))
	// SCALE_DOWN of the other kinds the ClusterRole names: a CronJob
	// suspended, a KEDA ScaledObject paused, an Argo Rollout scaled.
	kinds := shared.Namespace(t)
	createManager(t, parkingEveryKind(t, shared.Admin, env.Dynamic, kinds, caseID))
	// A rule's record of a namespace is an annotation on it.
	ruleHome := shared.Namespace(t)
	ruled := labelled(t, caseID, 1)[0]
	createManager(t, managerObj(ruleHome, "rule", caseID, []any{ownerGonePolicy("notify once the owner went", 0, webhookAction(recv.URL+"/rule")), ttlPolicy("notify at once", 0, webhookAction(recv.URL+"/rule"))}, selecting(caseID)))
	ownedByGone(t.Context(), t, shared.Admin, del, hook, ruled)

	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	waitPast(createdAt(t, idle))
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", ruleHome)
	wantCode(t, res, 0)
	for _, ns := range []string{del, scale, hook, idle, kinds} {
		wantState(t, res, ns, ns, report.StateFired)
	}
	if p := res.Pair(t, ruleHome, "rule", ruled); p.State != report.StateFired {
		t.Fatalf("rule on %s: %q (%s), want fired", ruled, p.State, p.Message)
	}
	wantOwnerGoneFired(t, res.Entry(t, del, del), res.Entry(t, hook, hook), res.Pair(t, ruleHome, "rule", ruled))
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	granted := grants(t)
	wantGrantedUsed(t, granted, after[len(before):])
	// What nsman doctor checks is what the ClusterRole grants.
	listed := map[string]bool{}
	for _, p := range nsmancluster.Permissions {
		res := p.Group + "/" + p.Resource
		if p.Subresource != "" {
			res += "/" + p.Subresource
		}
		listed[p.Verb+" "+res] = true
	}
	if !maps.Equal(listed, granted) {
		t.Errorf("cluster.Permissions %v, the ClusterRole grants %v: want the same", slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(granted)))
	}
	for _, forbidden := range []string{"secrets", "customresourcedefinitions"} {
		for g := range granted {
			if strings.Contains(g, forbidden) {
				t.Errorf("the ClusterRole grants %s", g)
			}
		}
	}
}
