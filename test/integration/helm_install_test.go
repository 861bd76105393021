package integration

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// installNamespace is the release namespace of the installed chart, as
// docs/helm.md installs it.
const installNamespace = "nsman"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestHelmInstallSweepsAsTheChartsServiceAccount installs the chart with
// helm install, its defaults and --create-namespace, on a control plane of
// its own that has nothing of nsman yet, then checks what a user would
// rely on: the chart's CRD is served; the CronJob's pod passes Pod
// Security "restricted" in the release namespace; a sweep with the
// CronJob's arguments, as the chart's ServiceAccount, deletes, scales
// down, calls a webhook, acts by a rule and on owners gone (each owner
// kind, Argo CD's and Flux's CRDs installed), using exactly what the
// chart's ClusterRole grants (audit log); helm upgrade changes the CronJob
// and a typo in a value fails it; helm uninstall leaves the CRD and the
// managers.
func TestHelmInstallSweepsAsTheChartsServiceAccount(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.APITier})
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	helm := func(args ...string) string {
		t.Helper()
		out, err := runHelm(ctx, t, append(args, "--kubeconfig", c.Kubeconfig)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	helm("install", chartRelease, chartDir, "--namespace", installNamespace, "--create-namespace")

	// What the release holds: the chart's objects, the CRD among them,
	// which helm upgrade then keeps at the chart's schema
	// (TestHelmUpgradesTheCRD) and helm uninstall keeps.
	manifest, err := nsmantest.Decode([]byte(helm("get", "manifest", chartRelease, "--namespace", installNamespace)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ClusterRole /nsman", "ClusterRole /nsman-edit", "ClusterRole /nsman-view", "ClusterRoleBinding /nsman", "CronJob nsman/nsman", "CustomResourceDefinition /namespacemanagers.k8s.consol.de", "ServiceAccount nsman/nsman", "ValidatingAdmissionPolicy /nsman", "ValidatingAdmissionPolicy /nsman-records", "ValidatingAdmissionPolicyBinding /nsman", "ValidatingAdmissionPolicyBinding /nsman-records"}
	if got := identities(manifest); !slices.Equal(got, want) {
		t.Errorf("the release holds %q, want %q", got, want)
	}
	crd, err := dyn.Resource(crdResource).Get(ctx, "namespacemanagers.k8s.consol.de", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's CRD is not installed: %v", err)
	}
	if crd.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" || crd.GetAnnotations()[keepPolicy] != "keep" {
		t.Errorf("CRD labels %v, annotations %v: want Helm's, kept on uninstall", crd.GetLabels(), crd.GetAnnotations())
	}

	// The CronJob as installed passes Pod Security "restricted" where it
	// runs, without a warning; a pod without runAsNonRoot does not, so the
	// namespace does enforce it.
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest","pod-security.kubernetes.io/warn":"restricted","pod-security.kubernetes.io/warn-version":"latest"}}}`
	if _, err := c.Admin.CoreV1().Namespaces().Patch(ctx, installNamespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cj, err := c.Admin.BatchV1().CronJobs(installNamespace).Get(ctx, chartRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podCreate := func(pod *corev1.Pod) ([]string, error) {
		cfg := rest.CopyConfig(c.AdminConfig)
		w := &warnings{}
		cfg.WarningHandlerWithContext = w
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().Pods(installNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return w.all(), err
	}
	if warned, err := podCreate(podFrom(cj)); err != nil || len(warned) > 0 {
		t.Fatalf("the installed CronJob's pod under Pod Security restricted: %v, warnings %q", err, warned)
	}
	root := podFrom(cj)
	root.Spec.SecurityContext.RunAsNonRoot = nil
	if _, err := podCreate(root); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "runAsNonRoot") {
		t.Fatalf("a pod without runAsNonRoot: %v, want it forbidden: the namespace does not enforce restricted", err)
	}

	// A sweep as the chart's ServiceAccount, with the CronJob's arguments
	// and its POD_NAMESPACE.
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.Containers[0].Args) == 0 || pod.Containers[0].Args[0] != "sweep" {
		t.Fatalf("containers %+v, want one that runs nsman sweep", pod.Containers)
	}
	args := pod.Containers[0].Args[1:]
	t.Setenv("POD_NAMESPACE", installNamespace)
	saCfg, err := c.ServiceAccountConfig(ctx, installNamespace, pod.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	sa := &nsmantest.Env{Cluster: c, Kubeconfig: filepath.Join(t.TempDir(), "chart-sa.kubeconfig"), User: cluster.ServiceAccountUser(installNamespace, pod.ServiceAccountName)}
	if err := cluster.WriteKubeconfig(sa.Kubeconfig, saCfg); err != nil {
		t.Fatal(err)
	}
	// The sweep runs under the chart's admission policy: it is in force
	// once it refuses the ServiceAccount a DELETE of the release namespace
	// (a dry run).
	saKube, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	var refused error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		refused = saKube.CoreV1().Namespaces().Delete(ctx, installNamespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(refused) && strings.Contains(refused.Error(), "ValidatingAdmissionPolicy '"+chartRelease+"'"), nil
	}); err != nil {
		t.Fatalf("the chart's admission policy does not refuse a DELETE of %s: %v (%v)", installNamespace, refused, err)
	}

	del, scale, hook, ruled, idle, kinds := c.Namespace(t), c.Namespace(t), c.Namespace(t), c.Namespace(t), c.Namespace(t), c.Namespace(t)
	caseID := del
	if _, err := c.Admin.CoreV1().Namespaces().Patch(ctx, ruled, types.MergePatchType, []byte(`{"metadata":{"labels":{"`+ruleLabel+`":"`+caseID+`"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/web:1"}}},
	}
	if _, err := c.Admin.AppsV1().Deployments(scale).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.AppsV1().StatefulSets(scale).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// OWNER_GONE lists each owner kind, and gets the owner by name before
	// it acts: the owner kinds' CRDs are Argo CD's and Flux's own.
	nsmantest.InstallGitOpsCRDs(t, dyn)
	ownedByGone(ctx, t, c.Admin, del, hook, ruled)
	recv := nsmantest.NewReceiver(t)
	sink := recv.ServiceURL(t, c.Admin, hook, "sink") + "/done"
	managers := dyn.Resource(nsmancluster.ManagerResource)
	for _, obj := range []*unstructured.Unstructured{
		managerObj(del, del, caseID, []any{ownerGonePolicy("delete once the owner went", 0, deleteAction), ttlPolicy("delete at once", 0, deleteAction)}),
		// IDLE reads what was created in a namespace once it is old enough.
		managerObj(idle, idle, caseID, []any{idlePolicy("idle a second", 1, deleteAction)}),
		managerObj(scale, scale, caseID, []any{podsPolicy("scale when no tests run", map[string]any{"component": "tests"}, map[string]any{"type": "SCALE_DOWN"})}),
		managerObj(hook, hook, caseID, []any{ownerGonePolicy("notify once the owner went", 0, webhookAction(sink)), ttlPolicy("notify at once", 0, webhookAction(sink))}),
		parkingEveryKind(t, c.Admin, dyn, kinds, caseID),
		// A rule in nsman's own namespace, which is trusted while
		// trustedNamespaces is unset.
		managerObj(installNamespace, "rule", caseID, []any{ownerGonePolicy("notify once the owner went", 0, webhookAction(recv.URL+"/rule")), ttlPolicy("notify at once", 0, webhookAction(recv.URL+"/rule"))}, selecting(caseID)),
	} {
		// The CRD is served a moment after Helm created it.
		var err error
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err = managers.Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("create manager %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
		}
	}

	created, err := c.Admin.CoreV1().Namespaces().Get(ctx, idle, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPast(created.CreationTimestamp.Time)
	before, err := c.AuditedRequests(ctx, sa.User)
	if err != nil {
		t.Fatal(err)
	}
	res := sa.Sweep(t, append(slices.Clone(args), "-l", caseLabel+"="+caseID)...)
	wantCode(t, res, 0)
	for _, ns := range []string{del, scale, hook, idle, kinds} {
		wantState(t, res, ns, ns, report.StateFired)
	}
	if p := res.Pair(t, installNamespace, "rule", ruled); p.State != report.StateFired {
		t.Fatalf("rule on %s: %q (%s), want fired", ruled, p.State, p.Message)
	}
	wantOwnerGoneFired(t, res.Entry(t, del, del), res.Entry(t, hook, hook), res.Pair(t, installNamespace, "rule", ruled))
	after, err := c.AuditedRequests(ctx, sa.User)
	if err != nil {
		t.Fatal(err)
	}
	role, err := c.Admin.RbacV1().ClusterRoles().Get(ctx, chartRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	granted := ruleGrants(t, role.Rules)
	if base := grants(t); !maps.Equal(granted, base) {
		t.Errorf("the installed ClusterRole grants %q, deploy/base/rbac.yaml %q", slices.Sorted(maps.Keys(granted)), slices.Sorted(maps.Keys(base)))
	}
	wantGrantedUsed(t, granted, after[len(before):])

	// helm upgrade changes the CronJob in place; a typo fails it and
	// leaves the release as it was.
	helm("upgrade", chartRelease, chartDir, "--namespace", installNamespace, "--reuse-values", "--set", "shards=3")
	cj, err = c.Admin.BatchV1().CronJobs(installNamespace).Get(ctx, chartRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job := cj.Spec.JobTemplate.Spec; ptr.Deref(job.CompletionMode, "") != batchv1.IndexedCompletion || ptr.Deref(job.Completions, 0) != 3 || !slices.Contains(cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args, "--shard-count=3") {
		t.Errorf("after helm upgrade --set shards=3: completionMode %v, completions %v, args %q", ptrString(job.CompletionMode), ptrString(job.Completions), job.Template.Spec.Containers[0].Args)
	}
	if _, err := runHelm(ctx, t, "upgrade", chartRelease, chartDir, "--namespace", installNamespace, "--reuse-values", "--set", "shard=4", "--kubeconfig", c.Kubeconfig); err == nil || !strings.Contains(err.Error(), "'shard' not allowed") {
		t.Errorf("helm upgrade --set shard=4: %v, want the schema to refuse it", err)
	}
	var history []struct {
		Revision int    `json:"revision"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(helm("history", chartRelease, "--namespace", installNamespace, "--max", "1", "-o", "json")), &history); err != nil {
		t.Fatal(err)
	}
	if len(history) != 1 || history[0].Revision != 2 || history[0].Status != "deployed" {
		t.Errorf("helm history after a refused upgrade: %+v, want revision 2 deployed", history)
	}

	// helm uninstall removes the chart's objects; the CRD, and with it
	// every manager, stays.
	helm("uninstall", chartRelease, "--namespace", installNamespace, "--wait")
	if _, err := c.Admin.BatchV1().CronJobs(installNamespace).Get(ctx, chartRelease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("CronJob after helm uninstall: %v, want it gone", err)
	}
	if _, err := c.Admin.RbacV1().ClusterRoles().Get(ctx, chartRelease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole after helm uninstall: %v, want it gone", err)
	}
	if _, err := dyn.Resource(crdResource).Get(ctx, "namespacemanagers.k8s.consol.de", metav1.GetOptions{}); err != nil {
		t.Errorf("CRD after helm uninstall: %v, want it kept", err)
	}
	if _, err := managers.Namespace(installNamespace).Get(ctx, "rule", metav1.GetOptions{}); err != nil {
		t.Errorf("manager after helm uninstall: %v, want it kept", err)
	}
}
