package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	nsmanwrite "github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// bareReplicaSet is a ReplicaSet of replicas that no Deployment controls.
func bareReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/lone:1"}}}}},
	}
}

// replicaSetsOf are the ReplicaSets of ns, "name replicas [record] [controlled]" each.
func replicaSetsOf(t *testing.T, ns string) []string {
	t.Helper()
	list, err := shared.Admin.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range list.Items {
		line := fmt.Sprintf("%s %d", rs.Name, *rs.Spec.Replicas)
		if v, ok := rs.Annotations[status.ReplicasAnnotation]; ok {
			line += fmt.Sprintf(" record %q", v)
		}
		if metav1.GetControllerOf(&rs) != nil {
			line += " controlled"
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// A SLEEP without selectors, run as nsman's ServiceAccount under the
// shipped ClusterRole (which lets it list ReplicaSets, for IDLE, but not
// patch them), puts a Deployment to sleep and leaves a bare ReplicaSet
// beside it as it is: discovery finds ReplicaSets (they have a scale
// subresource), but the sweep's access review says nsman may not patch
// them, so they are not taken; the Deployment's own ReplicaSet is its
// controller's in any case. No request is refused, the sleep is whole, the
// sweeps while asleep do not see the ReplicaSet as awake, and the wake
// brings the Deployment back and leaves the ReplicaSet alone again. Before
// the access review, the sleep patched the bare ReplicaSet, was refused
// (403) and failed, at every sweep; one at 0 replicas never failed it,
// since a workload at 0 is not written to.
func TestSleepLeavesABareReplicaSetItMayNotPatch(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	if _, err := shared.Admin.AppsV1().ReplicaSets(ns).Create(t.Context(), bareReplicaSet("lone", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deployment controller makes web's ReplicaSet.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(replicaSetsOf(t, ns)) == 2, nil
	}); err != nil {
		t.Fatalf("ReplicaSets %q, want web's beside lone", replicaSetsOf(t, ns))
	}
	createManager(t, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	sweep := func(want report.State) report.Entry {
		t.Helper()
		res := e.Sweep(t, "-l", caseLabel+"="+ns)
		wantCode(t, res, 0)
		got := wantState(t, res, ns, ns, want)
		if len(got.Warnings) > 0 {
			t.Errorf("entry %+v: warnings %q, want none", got, got.Warnings)
		}
		return got
	}

	slept := sweep(report.StateFired)
	if slices.ContainsFunc(slept.Effects, func(s string) bool { return strings.Contains(s, "ReplicaSet") }) {
		t.Errorf("effects %q, want no ReplicaSet in them", slept.Effects)
	}
	wantWorkload(t, ns, "web", 0, "2")
	if st := managerStatus(t, ns, ns); st.Asleep == nil || st.Asleep.Partial {
		t.Errorf("status asleep %+v, want asleep wholly", st.Asleep)
	}
	sweep(report.StateAsleep) // lone is not awake to nsman: nothing to put back
	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
	if _, err := env.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if woke := sweep(report.StateFired); !woke.Woke {
		t.Errorf("entry %+v, want a wake", woke)
	}
	wantWorkload(t, ns, "web", 2, "")
	// web's ReplicaSet carries web's annotations, the record among them:
	// the deployment controller copies them. The audit log below says
	// nsman wrote to no ReplicaSet.
	if rs := replicaSetsOf(t, ns); len(rs) != 2 || rs[0] != "lone 1" || !strings.HasSuffix(rs[1], " controlled") {
		t.Errorf("ReplicaSets %q, want lone at 1, with no record, and web's", rs)
	}

	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	reviews := 0
	for _, r := range after[len(before):] {
		switch {
		case r.Code == 403:
			t.Errorf("refused: %s", r)
		case r.Resource == "replicasets" && r.Verb != "list":
			t.Errorf("nsman wrote to a ReplicaSet: %s", r)
		case r.Resource == "selfsubjectaccessreviews":
			reviews++
		}
	}
	if reviews == 0 {
		t.Error("no access review in the audit log: want one per kind found, per sweep")
	}
}

// TestSleepWithAnAPIGroupUnavailable registers, on a control plane of its
// own (an unavailable group stalls namespace deletion there), an
// APIService for a made-up group whose Service does not exist, and puts a
// namespace to sleep by a SLEEP without selectors as nsman's ServiceAccount:
// the group's failed discovery fails that group alone. The Deployment goes
// to 0, the entry is fired (not failed, the sweep exits 0) and names the
// group in its warnings, and a Warning Event Incomplete says so; while
// asleep, the awake check still reads every kind it knows and puts back to
// sleep what someone woke; the wake brings the Deployment back.
func TestSleepWithAnAPIGroupUnavailable(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.APITier})
	e, err := nsmantest.Setup(ctx, c, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t)
	if _, err := c.Admin.AppsV1().Deployments(ns).Create(ctx, nsmantest.Deployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Create(ctx, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Apply(t, []byte(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.madeup.nsman.test}
spec:
  group: madeup.nsman.test
  version: v1alpha1
  service: {namespace: default, name: nowhere}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
`))
	// The aggregator marks the group unavailable within seconds.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, _, err := discovery.ServerGroupsAndResources(c.Admin.Discovery())
		failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err)
		_, named := failed[schema.GroupVersion{Group: "madeup.nsman.test", Version: "v1alpha1"}]
		return partial && named, nil
	}); err != nil {
		t.Fatal("discovery never said madeup.nsman.test/v1alpha1 failed")
	}
	web := func() int32 {
		t.Helper()
		d, err := c.Admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	sweep := func(want report.State) report.Entry {
		t.Helper()
		res := e.Sweep(t, "-l", caseLabel+"="+ns)
		wantCode(t, res, 0)
		return wantState(t, res, ns, ns, want)
	}
	unavailable := func(got report.Entry) {
		t.Helper()
		if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "madeup.nsman.test/v1alpha1") {
			t.Errorf("warnings %q, want one naming madeup.nsman.test/v1alpha1", got.Warnings)
		}
	}

	unavailable(sweep(report.StateFired))
	if n := web(); n != 0 {
		t.Errorf("web at %d replicas, want 0", n)
	}
	events, err := c.Admin.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Incomplete,regarding.name=" + ns})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Type != corev1.EventTypeWarning || !strings.Contains(events.Items[0].Note, "madeup.nsman.test/v1alpha1") {
		t.Errorf("Events Incomplete %+v, want one Warning naming the group", events.Items)
	}

	sweep(report.StateAsleep)
	if _, err := c.Admin.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if back := sweep(report.StateFired); len(back.Undone) != 1 || back.Woke {
		t.Errorf("entry %+v: want web put back to sleep, naming who woke it", back)
	}
	if n := web(); n != 0 {
		t.Errorf("web at %d replicas after it was put back to sleep, want 0", n)
	}

	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
	if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	woke := sweep(report.StateFired)
	unavailable(woke)
	if n := web(); !woke.Woke || n != 3 {
		t.Errorf("entry %+v, web at %d: want a wake back to 3", woke, n)
	}
}

// A SLEEP without selectors whose sleep of one workload of a kind found by
// discovery (an Argo Rollout, which the shipped ClusterRole lets nsman
// patch) an admission policy refuses with a 403 puts the rest to sleep,
// leaves that one as it was and names it in the entry's warnings and a
// Warning Event Incomplete: the sleep is fired and whole, not failed.
// (Before, the 403 failed the sleep part-way, at every sweep.)
func TestSleepRefusedForOneWorkloadIsAWarning(t *testing.T) {
	e := setup(t)
	nsmantest.InstallFixtureCRDs(t, env.Dynamic)
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 2)
	for _, name := range []string{"canary", "refused"} {
		createCustom(t, ns, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)}})
	}
	policy := "refuse-" + ns
	e.Apply(t, fmt.Appendf(nil, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [argoproj.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [rollouts]
  matchConditions:
    - name: this-one
      expression: object.metadata.namespace == %[2]q && object.metadata.name == "refused"
  validations:
    - expression: "false"
      message: this Rollout is not to be changed
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
`, policy, ns))
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = shared.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, policy, metav1.DeleteOptions{})
		_ = shared.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, policy, metav1.DeleteOptions{})
	})
	// The API server enforces a new policy within seconds: wait until a
	// dry-run patch is refused.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Dynamic.Resource(nsmantest.RolloutResource).Namespace(ns).Patch(ctx, "refused", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), nil
	}); err != nil {
		t.Fatal("the admission policy never refused a patch of Rollout refused")
	}
	createManager(t, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	slept := wantState(t, res, ns, ns, report.StateFired)
	if len(slept.Warnings) != 1 || slept.Warnings[0] != "refused (403), left as they were: Rollout/refused" {
		t.Errorf("warnings %q, want Rollout/refused named", slept.Warnings)
	}
	wantWorkload(t, ns, "web", 0, "2")
	for name, want := range map[string]int64{"canary": 0, "refused": 1} {
		ro, err := env.Dynamic.Resource(nsmantest.RolloutResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(ro.Object, "spec", "replicas"); n != want {
			t.Errorf("Rollout %s at %d replicas, want %d", name, n, want)
		}
	}
	if st := managerStatus(t, ns, ns); st.Asleep == nil || st.Asleep.Partial {
		t.Errorf("status asleep %+v, want asleep wholly", st.Asleep)
	}
	if n := sleepEvents(t, ns, ns, "Incomplete"); n != 1 {
		t.Errorf("%d Events Incomplete, want 1", n)
	}
	// The next sweep finds Rollout refused awake, tries it once more (one
	// patch, refused), and says the namespace asleep, with no new Event.
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)
	if n := sleepEvents(t, ns, ns, "Incomplete"); n != 1 {
		t.Errorf("%d Events Incomplete after the sweep while asleep, want 1", n)
	}
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, r := range after[len(before):] {
		if r.Namespace == ns && r.Verb == "patch" {
			writes = append(writes, r.String())
		}
	}
	if want := fmt.Sprintf("patch rollouts.argoproj.io %s/refused -> 403", ns); len(writes) != 1 || writes[0] != want {
		t.Errorf("the sweep while asleep patched %q, want %q alone", writes, want)
	}
}
