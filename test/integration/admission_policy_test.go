package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/cmd"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// The kinds of deploy/base/admission-policy.yaml.
const (
	policyKind  = "ValidatingAdmissionPolicy"
	bindingKind = "ValidatingAdmissionPolicyBinding"
)

var (
	policyResource  = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
)

// saClient is a clientset that acts as the ServiceAccount of kubeconfig.
func saClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// dryRun persists nothing: a write that the policy should refuse but lets
// through changes nothing of the control plane the other tests share.
var dryRun = []string{metav1.DryRunAll}

func mergePatch(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// deniedBy checks that err is a refusal by the policy named policy whose
// message says want.
func deniedBy(t *testing.T, err error, policy, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("allowed, want %s to refuse it (%q)", policy, want)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policy) || !strings.Contains(err.Error(), want):
		t.Errorf("%v, want a refusal by %s that says %q", err, policy, want)
	}
}

// workloads creates, as admin, a Deployment web with 2 replicas and a
// StatefulSet db with 1 in namespace.
func workloads(t *testing.T, namespace string) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/web:1"}}},
	}
	if _, err := shared.Admin.AppsV1().Deployments(namespace).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Admin.AppsV1().StatefulSets(namespace).Create(t.Context(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The annotations nsman writes on workloads beside the replicas record
// (status.ReplicasAnnotation), and what the fence says it allows of each
// kind.
const (
	suspendRecord       = "nsman.k8s.consol.de/suspend-before-scale-down"
	pausedReplicas      = "autoscaling.keda.sh/paused-replicas"
	pausedRecord        = "nsman.k8s.consol.de/paused-replicas-before-scale-down"
	fluxReconcile       = "kustomize.toolkit.fluxcd.io/reconcile"
	reconcileRecord     = "nsman.k8s.consol.de/reconcile-before-sleep"
	reconcileAllowed    = fluxReconcile + ", " + reconcileRecord
	scaleKindAllowed    = "nsman may change only spec.replicas and the annotations " + status.ReplicasAnnotation + ", " + status.ReplicasAsleepAnnotation + ", " + reconcileAllowed + " of "
	cronJobAllowed      = "nsman may change only spec.suspend and the annotations " + suspendRecord + ", " + reconcileAllowed + " of "
	scaledObjectAllowed = "nsman may change only the annotations " + pausedReplicas + ", " + pausedRecord + ", " + reconcileAllowed + " of "
)

var (
	deploymentResource = appsv1.SchemeGroupVersion.WithResource("deployments")
	jobResource        = batchv1.SchemeGroupVersion.WithResource("jobs")
	priorityClassRes   = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
	scaledObjectRes    = nsmantest.ScaledObjectResource
	rolloutResource    = nsmantest.RolloutResource
	// The kind of each resource that sleepers creates.
	sleeperKinds = map[schema.GroupVersionResource]string{cronJobResource: "CronJob", scaledObjectRes: "ScaledObject", rolloutResource: "Rollout"}
)

// bindClusterRole creates ClusterRole role of rules, bound to subject, for
// the time of t.
func bindClusterRole(ctx context.Context, t *testing.T, role string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) {
	t.Helper()
	if _, err := shared.Admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{subject},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = shared.Admin.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
}

// grantPatch lets the ServiceAccount namespace/name patch CronJobs, Jobs,
// ScaledObjects, Rollouts and PriorityClasses, whatever deploy/'s RBAC
// grants: the fence tests put the admission policy to the test, not RBAC.
func grantPatch(ctx context.Context, t *testing.T, client dynamic.Interface, namespace, name string) {
	t.Helper()
	role := "nsman-test-patch-" + namespace + "-" + name
	bindClusterRole(ctx, t, role, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name},
		rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{scaledObjectRes.Group}, Resources: []string{scaledObjectRes.Resource}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{rolloutResource.Group}, Resources: []string{rolloutResource.Resource}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{priorityClassRes.Group}, Resources: []string{priorityClassRes.Resource}, Verbs: []string{"patch"}},
	)
	// In force once the last rule lets it patch a PriorityClass (an empty
	// patch of one it creates: it changes nothing, which the fence allows).
	pc := priorityClass(ctx, t, role)
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = client.Resource(priorityClassRes).Patch(ctx, pc, types.MergePatchType, []byte(`{}`), metav1.PatchOptions{DryRun: dryRun})
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%s/%s may not patch a PriorityClass: %v (%v)", namespace, name, last, err)
	}
}

// priorityClass creates, as admin, a PriorityClass named name: a
// cluster-scoped object nsman's ServiceAccount may be granted to patch.
func priorityClass(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	if _, err := shared.Admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// sleepers creates, as admin, in namespace the kinds beside Deployments
// and StatefulSets that nsman puts to sleep, each named prefix + its role:
// a CronJob nightly that runs; a ScaledObject web that is not paused and
// one paused at 3 replicas, and one odd whose spec is no map (a kind with
// a scale subresource cannot have such a spec); a Rollout canary with 3
// replicas, and one bare without spec or annotations.
func sleepers(ctx context.Context, t *testing.T, client dynamic.Interface, namespace, prefix string) {
	t.Helper()
	container := map[string]any{"name": "main", "image": "registry.invalid/job:1"}
	for _, o := range []struct {
		res schema.GroupVersionResource
		obj map[string]any
	}{
		{cronJobResource, map[string]any{"metadata": map[string]any{"name": prefix + "nightly"}, "spec": map[string]any{
			"schedule": "0 1 * * *", "suspend": false,
			"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never", "containers": []any{container},
			}}}},
		}}},
		{scaledObjectRes, map[string]any{"metadata": map[string]any{"name": prefix + "web"}, "spec": map[string]any{
			"scaleTargetRef": map[string]any{"name": "web"}, "maxReplicaCount": int64(5),
		}}},
		{scaledObjectRes, map[string]any{"metadata": map[string]any{"name": prefix + "paused", "annotations": map[string]any{pausedReplicas: "3"}}, "spec": map[string]any{
			"scaleTargetRef": map[string]any{"name": "db"},
		}}},
		{rolloutResource, map[string]any{"metadata": map[string]any{"name": prefix + "canary"}, "spec": map[string]any{
			"replicas": int64(3), "strategy": map[string]any{"canary": map[string]any{}},
		}}},
		{rolloutResource, map[string]any{"metadata": map[string]any{"name": prefix + "bare"}}},
		{scaledObjectRes, map[string]any{"metadata": map[string]any{"name": prefix + "odd"}, "spec": "paused"}},
	} {
		obj := &unstructured.Unstructured{Object: o.obj}
		obj.SetAPIVersion(o.res.GroupVersion().String())
		obj.SetKind(sleeperKinds[o.res])
		if _, err := client.Resource(o.res).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s/%s: %v", obj.GetKind(), namespace, obj.GetName(), err)
		}
		t.Cleanup(func() {
			_ = client.Resource(o.res).Namespace(namespace).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
		})
	}
}

// saDynamic is a dynamic client that acts as the ServiceAccount of
// kubeconfig.
func saDynamic(t *testing.T, kubeconfig string) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// patchAs sends client's merge patch of res namespace/name; with
// atVersion, as nsman sends its writes, conditional on the resourceVersion
// it has now.
func patchAs(ctx context.Context, client dynamic.Interface, res schema.GroupVersionResource, namespace, name string, patch map[string]any, atVersion bool, opts metav1.PatchOptions) error {
	r := client.Resource(res)
	var c dynamic.ResourceInterface = r
	if namespace != "" {
		c = r.Namespace(namespace)
	}
	if !atVersion {
		_, err := c.Patch(ctx, name, types.MergePatchType, mergePatch(patch), opts)
		return err
	}
	// A controller may write the object in between (a Deployment's
	// status): read it again, as nsman does.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := env.Dynamic.Resource(res).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		at := maps.Clone(patch)
		meta, _ := at["metadata"].(map[string]any)
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["resourceVersion"] = obj.GetResourceVersion()
		at["metadata"] = meta
		_, err = c.Patch(ctx, name, types.MergePatchType, mergePatch(at), opts)
		return err
	})
}

// annotated is a merge patch of metadata.annotations and, unless nil, spec.
func annotated(annotations map[string]any, spec map[string]any) map[string]any {
	p := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	if spec != nil {
		p["spec"] = spec
	}
	return p
}

// TestAdmissionPolicyFencesNsmansServiceAccount: as nsman's ServiceAccount,
// under deploy/base's RBAC and admission policy (and a grant to patch the
// other kinds nsman puts to sleep: CronJobs, KEDA ScaledObjects, Argo
// Rollouts, whose CRDs test/fixtures/crds stands in for), every write a
// sweep never makes is refused with the policy's message, and each write
// a sweep makes goes through; an admin is not affected. (A real
// sweep doing every action under the policy: every other integration
// test, TestShippedRBACIsExactlyWhatASweepUses among them.)
func TestAdmissionPolicyFencesNsmansServiceAccount(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sa := saClient(t, e.Kubeconfig)
	tenant, doomed := shared.Namespace(t), shared.Namespace(t)
	workloads(t, tenant)
	// A Deployment in nsman's own namespace, which is protected.
	own := nsmantest.ServiceAccountNamespace
	if _, err := shared.Admin.AppsV1().Deployments(own).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "fence-" + tenant},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": tenant}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": tenant}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/web:1"}}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.AppsV1().Deployments(own).Delete(context.Background(), "fence-"+tenant, metav1.DeleteOptions{})
	})
	// The other kinds nsman puts to sleep, in the tenant namespace and in
	// its own; a batch Job, which is no CronJob; a cluster-scoped object;
	// and a manager in nsman's own namespace, which a sweep deactivates.
	nsmantest.InstallFixtureCRDs(t, e.Dynamic)
	sleepers(ctx, t, e.Dynamic, tenant, "")
	// A CronJob's name has room for 52 characters: the tenant namespace's
	// random suffix tells this test's apart.
	ownPrefix := "fence-" + tenant[strings.LastIndex(tenant, "-")+1:] + "-"
	sleepers(ctx, t, e.Dynamic, own, ownPrefix)
	if _, err := shared.Admin.BatchV1().Jobs(tenant).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/job:1"}},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ownManager := "fence-" + tenant
	createManager(t, managerObj(own, ownManager, tenant, []any{ttlPolicy("in ten years", 10*365*24*3600, deleteAction)}, targeting(tenant)))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(own).Delete(context.Background(), ownManager, metav1.DeleteOptions{})
	})
	saDyn := saDynamic(t, e.Kubeconfig)
	grantPatch(ctx, t, saDyn, nsmantest.ServiceAccountNamespace, nsmantest.ServiceAccountName)
	pc := priorityClass(ctx, t, "nsman-test-fence-"+tenant)
	crPatch := func(res schema.GroupVersionResource, namespace, name, patch string) func() error {
		return func() error {
			var p map[string]any
			if err := json.Unmarshal([]byte(patch), &p); err != nil {
				return err
			}
			return patchAs(ctx, saDyn, res, namespace, name, p, false, metav1.PatchOptions{})
		}
	}

	policy := nsmantest.AdmissionPolicy
	nsPatch := func(name string, pt types.PatchType, patch []byte, opts metav1.PatchOptions) error {
		_, err := sa.CoreV1().Namespaces().Patch(ctx, name, pt, patch, opts)
		return err
	}
	nsDelete := func(name string) error {
		return sa.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{DryRun: dryRun})
	}
	deploymentPatch := func(namespace, name string, pt types.PatchType, patch []byte) error {
		_, err := sa.AppsV1().Deployments(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
		return err
	}
	statefulSetPatch := func(pt types.PatchType, patch []byte) error {
		_, err := sa.AppsV1().StatefulSets(tenant).Patch(ctx, "db", pt, patch, metav1.PatchOptions{})
		return err
	}

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			do   func() error
			// by is who refuses, want what the refusal says.
			by, want string
		}{
			// kube-system, kube-public and default are never deleted,
			// whoever asks: NamespaceLifecycle, an admission plugin on by
			// default, refuses first. The policy refuses changes to them,
			// below, and DELETEs of the other protected namespaces.
			{"delete kube-system", func() error { return nsDelete("kube-system") }, "namespaces \"kube-system\" is forbidden", "may not be deleted"},
			{"delete kube-node-lease", func() error { return nsDelete("kube-node-lease") }, policy, "may not delete namespace kube-node-lease: it is protected"},
			{"delete nsman's own namespace", func() error { return nsDelete(own) }, policy, "may not delete namespace " + own + ": it is protected"},
			{"strip kube-system's Pod Security labels", func() error {
				return nsPatch("kube-system", types.MergePatchType, mergePatch(map[string]any{"metadata": map[string]any{"labels": map[string]any{
					"pod-security.kubernetes.io/enforce": nil, "pod-security.kubernetes.io/warn": nil, "pod-security.kubernetes.io/audit": nil,
				}}}), metav1.PatchOptions{DryRun: dryRun})
			}, policy, "may not change namespace kube-system: it is protected"},
			{"label kube-public", func() error {
				return nsPatch("kube-public", types.MergePatchType, []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`), metav1.PatchOptions{DryRun: dryRun})
			}, policy, "may not change namespace kube-public: it is protected"},
			// default is protected by nsman's default --protected-namespaces,
			// configuredProtectedNamespaces in the policy: not even nsman's
			// own annotations change there.
			{"annotate default, a configured protected namespace", func() error {
				return nsPatch("default", types.MergePatchType, []byte(`{"metadata":{"annotations":{"nsman.k8s.consol.de/hold-until":"2030-01-01T00:00:00Z"}}}`), metav1.PatchOptions{DryRun: dryRun})
			}, policy, "may not change namespace default: it is protected"},
			{"label a tenant namespace", func() error {
				return nsPatch(tenant, types.MergePatchType, []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`), metav1.PatchOptions{})
			}, policy, "may change only its own annotations (nsman.k8s.consol.de/*) of namespace " + tenant + ", not metadata.labels"},
			{"another annotation of a tenant namespace", func() error {
				return nsPatch(tenant, types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/owner":"nsman"}}}`), metav1.PatchOptions{})
			}, policy, "not annotation example.com/owner"},
			{"a finalizer on a tenant namespace", func() error {
				return nsPatch(tenant, types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/keep"]}}`), metav1.PatchOptions{})
			}, policy, "not metadata.finalizers"},
			{"nsman's annotation and a label at once", func() error {
				return nsPatch(tenant, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"},"annotations":{"nsman.k8s.consol.de/hold-until":"2030-01-01T00:00:00Z"}}}`), metav1.PatchOptions{})
			}, policy, "not metadata.labels"},
			{"a Deployment's image", func() error {
				return deploymentPatch(tenant, "web", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/miner:1"}]}}}}`))
			}, policy, "of Deployment " + tenant + "/web, not spec.template"},
			{"a Deployment's image with its replicas", func() error {
				return deploymentPatch(tenant, "web", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":0},{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.invalid/miner:1"}]`))
			}, policy, "not spec.template"},
			{"a Deployment's strategy", func() error {
				return deploymentPatch(tenant, "web", types.MergePatchType, []byte(`{"spec":{"paused":true}}`))
			}, policy, "not spec.paused"},
			{"a Deployment's labels", func() error {
				return deploymentPatch(tenant, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"}}}`))
			}, policy, "not metadata.labels"},
			{"another annotation of a Deployment", func() error {
				return deploymentPatch(tenant, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"nsman.k8s.consol.de/hold-until":"2030-01-01T00:00:00Z"}}}`))
			}, policy, "not annotation nsman.k8s.consol.de/hold-until"},
			{"a StatefulSet's pod template", func() error {
				return statefulSetPatch(types.MergePatchType, []byte(`{"spec":{"template":{"spec":{"serviceAccountName":"admin"}}}}`))
			}, policy, "of StatefulSet " + tenant + "/db, not spec.template"},
			{"scale a Deployment in nsman's own namespace", func() error {
				return deploymentPatch(own, "fence-"+tenant, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
			}, policy, "may not change Deployment " + own + "/fence-" + tenant + ": namespace " + own + " is protected"},
			{"Flux's reconcile annotation on a Deployment in nsman's own namespace", crPatch(deploymentResource, own, "fence-"+tenant, `{"metadata":{"annotations":{"`+fluxReconcile+`":"disabled","`+reconcileRecord+`":""}}}`),
				policy, "may not change Deployment " + own + "/fence-" + tenant + ": namespace " + own + " is protected"},
			{"suspend a CronJob in nsman's own namespace", crPatch(cronJobResource, own, ownPrefix+"nightly", `{"spec":{"suspend":true},"metadata":{"annotations":{"`+suspendRecord+`":"false"}}}`),
				policy, "may not change CronJob " + own + "/" + ownPrefix + "nightly: namespace " + own + " is protected"},
			{"pause a ScaledObject in nsman's own namespace", crPatch(scaledObjectRes, own, ownPrefix+"web", `{"metadata":{"annotations":{"`+pausedReplicas+`":"0","`+pausedRecord+`":""}}}`),
				policy, "may not change ScaledObject " + own + "/" + ownPrefix + "web: namespace " + own + " is protected"},
			{"scale a Rollout in nsman's own namespace", crPatch(rolloutResource, own, ownPrefix+"canary", `{"spec":{"replicas":0},"metadata":{"annotations":{"`+status.ReplicasAnnotation+`":"3"}}}`),
				policy, "may not change Rollout " + own + "/" + ownPrefix + "canary: namespace " + own + " is protected"},
			{"a Deployment's labels, as the message says what it allows", func() error {
				return deploymentPatch(tenant, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"}}}`))
			}, policy, scaleKindAllowed + "Deployment " + tenant + "/web, not metadata.labels"},
			{"a ScaledObject's pause on a Deployment", crPatch(deploymentResource, tenant, "web", `{"metadata":{"annotations":{"`+pausedReplicas+`":"0"}}}`),
				policy, "of Deployment " + tenant + "/web, not annotation " + pausedReplicas},
			{"a CronJob's schedule", crPatch(cronJobResource, tenant, "nightly", `{"spec":{"schedule":"* * * * *"}}`),
				policy, cronJobAllowed + "CronJob " + tenant + "/nightly, not spec.schedule"},
			{"a CronJob's schedule with its suspension", crPatch(cronJobResource, tenant, "nightly", `{"spec":{"suspend":true,"schedule":"* * * * *"},"metadata":{"annotations":{"`+suspendRecord+`":"false"}}}`),
				policy, "of CronJob " + tenant + "/nightly, not spec.schedule"},
			{"the replicas record on a CronJob", crPatch(cronJobResource, tenant, "nightly", `{"spec":{"suspend":true},"metadata":{"annotations":{"`+status.ReplicasAnnotation+`":"1"}}}`),
				policy, "of CronJob " + tenant + "/nightly, not annotation " + status.ReplicasAnnotation},
			{"a CronJob's labels", crPatch(cronJobResource, tenant, "nightly", `{"metadata":{"labels":{"team":"x"}}}`),
				policy, "of CronJob " + tenant + "/nightly, not metadata.labels"},
			// A Job is of group batch but no CronJob: it is not suspended.
			{"a Job's spec.suspend", func() error {
				return patchAs(ctx, saDyn, jobResource, tenant, "once", map[string]any{"spec": map[string]any{"suspend": false}}, false, metav1.PatchOptions{DryRun: dryRun})
			}, policy, scaleKindAllowed + "Job " + tenant + "/once, not spec.suspend"},
			{"a ScaledObject's spec", crPatch(scaledObjectRes, tenant, "web", `{"spec":{"maxReplicaCount":0}}`),
				policy, scaledObjectAllowed + "ScaledObject " + tenant + "/web, not spec.maxReplicaCount"},
			{"a ScaledObject's spec with its pause", crPatch(scaledObjectRes, tenant, "web", `{"spec":{"maxReplicaCount":0},"metadata":{"annotations":{"`+pausedReplicas+`":"0","`+pausedRecord+`":""}}}`),
				policy, "of ScaledObject " + tenant + "/web, not spec.maxReplicaCount"},
			{"another autoscaling.keda.sh annotation of a ScaledObject", crPatch(scaledObjectRes, tenant, "web", `{"metadata":{"annotations":{"autoscaling.keda.sh/paused":"true"}}}`),
				policy, "of ScaledObject " + tenant + "/web, not annotation autoscaling.keda.sh/paused"},
			{"the replicas record on a ScaledObject", crPatch(scaledObjectRes, tenant, "web", `{"metadata":{"annotations":{"`+status.ReplicasAnnotation+`":"1"}}}`),
				policy, "of ScaledObject " + tenant + "/web, not annotation " + status.ReplicasAnnotation},
			{"a ScaledObject's labels", crPatch(scaledObjectRes, tenant, "web", `{"metadata":{"labels":{"team":"x"}}}`),
				policy, "of ScaledObject " + tenant + "/web, not metadata.labels"},
			{"a Rollout's strategy", crPatch(rolloutResource, tenant, "canary", `{"spec":{"strategy":{"blueGreen":{}}}}`),
				policy, scaleKindAllowed + "Rollout " + tenant + "/canary, not spec.strategy"},
			{"a Rollout's spec.suspend", crPatch(rolloutResource, tenant, "canary", `{"spec":{"suspend":true}}`),
				policy, "of Rollout " + tenant + "/canary, not spec.suspend"},
			{"the suspend record on a Rollout", crPatch(rolloutResource, tenant, "canary", `{"metadata":{"annotations":{"`+suspendRecord+`":"false"}}}`),
				policy, "of Rollout " + tenant + "/canary, not annotation " + suspendRecord},
			{"a Rollout's labels", crPatch(rolloutResource, tenant, "canary", `{"metadata":{"labels":{"team":"x"}}}`),
				policy, "of Rollout " + tenant + "/canary, not metadata.labels"},
			{"a field of a Rollout beside its spec", crPatch(rolloutResource, tenant, "canary", `{"data":{"script":"mine"}}`),
				policy, "of Rollout " + tenant + "/canary, not data"},
			{"a spec field of a Rollout without spec", crPatch(rolloutResource, tenant, "bare", `{"spec":{"template":{}}}`),
				policy, "of Rollout " + tenant + "/bare, not spec.template"},
			{"a label on a Rollout without spec or annotations", crPatch(rolloutResource, tenant, "bare", `{"metadata":{"labels":{"team":"x"}}}`),
				policy, "of Rollout " + tenant + "/bare, not metadata.labels"},
			{"the spec of a ScaledObject whose spec is no map", crPatch(scaledObjectRes, tenant, "odd", `{"spec":"running"}`),
				policy, "of ScaledObject " + tenant + "/odd, not spec"},
			{"Flux's reconcile annotation on a cluster-scoped object", crPatch(priorityClassRes, "", pc, `{"metadata":{"annotations":{"`+fluxReconcile+`":"disabled"}}}`),
				policy, "nsman may change no cluster-scoped object but namespaces: not PriorityClass " + pc},
		} {
			t.Run(tc.name, func(t *testing.T) { deniedBy(t, tc.do(), tc.by, tc.want) })
		}
		// Nothing refused changed anything.
		ns, err := shared.Admin.CoreV1().Namespaces().Get(ctx, tenant, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ns.Finalizers) > 0 || ns.Labels["team"] != "" || ns.Labels["pod-security.kubernetes.io/enforce"] != "" || ns.Annotations["example.com/owner"] != "" {
			t.Errorf("namespace %s changed: labels %v, annotations %v, finalizers %v", tenant, ns.Labels, ns.Annotations, ns.Finalizers)
		}
		d, err := shared.Admin.AppsV1().Deployments(tenant).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Template.Spec.Containers[0].Image != "registry.invalid/web:1" || ptr.Deref(d.Spec.Replicas, 0) != 2 || d.Spec.Paused {
			t.Errorf("Deployment %s/web changed: image %s, replicas %d, paused %v", tenant, d.Spec.Template.Spec.Containers[0].Image, ptr.Deref(d.Spec.Replicas, 0), d.Spec.Paused)
		}
		for _, o := range []struct {
			res  schema.GroupVersionResource
			name string
			path []string
			want any
		}{
			{cronJobResource, "nightly", []string{"spec", "schedule"}, "0 1 * * *"},
			{cronJobResource, "nightly", []string{"spec", "suspend"}, false},
			{scaledObjectRes, "web", []string{"spec", "maxReplicaCount"}, int64(5)},
			{rolloutResource, "canary", []string{"spec", "strategy"}, map[string]any{"canary": map[string]any{}}},
			{rolloutResource, "bare", []string{"spec"}, nil},
		} {
			obj, err := e.Dynamic.Resource(o.res).Namespace(tenant).Get(ctx, o.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := unstructured.NestedFieldNoCopy(obj.Object, o.path...); !reflect.DeepEqual(got, o.want) || len(obj.GetLabels()) > 0 || len(obj.GetAnnotations()) > 0 {
				t.Errorf("%s %s/%s changed: %s %v, labels %v, annotations %v, want %v and none", obj.GetKind(), tenant, o.name, strings.Join(o.path, "."), got, obj.GetLabels(), obj.GetAnnotations(), o.want)
			}
		}
	})

	t.Run("allowed", func(t *testing.T) {
		ns, err := shared.Admin.CoreV1().Namespaces().Get(ctx, tenant, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A rule's claim and record: a merge patch of nsman's annotation,
		// conditional on the resourceVersion (or the uid); a stale record's
		// removal: a JSON patch that tests it, then removes it.
		record := status.PairAnnotationPrefix + "00000000-0000-0000-0000-000000000000"
		if err := nsPatch(tenant, types.MergePatchType, mergePatch(map[string]any{"metadata": map[string]any{
			"resourceVersion": ns.ResourceVersion, "annotations": map[string]any{record: `{"rule":"x/y"}`},
		}}), metav1.PatchOptions{}); err != nil {
			t.Errorf("nsman's annotation written on a namespace: %v", err)
		}
		if err := nsPatch(tenant, types.MergePatchType, mergePatch(map[string]any{"metadata": map[string]any{
			"uid": ns.UID, "annotations": map[string]any{status.HoldAnnotation: "2030-01-01T00:00:00Z"},
		}}), metav1.PatchOptions{}); err != nil {
			t.Errorf("nsman's hold written on a namespace: %v", err)
		}
		path := "/metadata/annotations/" + strings.ReplaceAll(record, "/", "~1")
		if err := nsPatch(tenant, types.JSONPatchType, []byte(fmt.Sprintf(`[{"op":"test","path":%q,"value":"{\"rule\":\"x/y\"}"},{"op":"remove","path":%q}]`, path, path)), metav1.PatchOptions{}); err != nil {
			t.Errorf("nsman's annotation removed from a namespace: %v", err)
		}

		// SCALE_DOWN: replicas and their record, conditional on the
		// resourceVersion, as a merge patch; then restore.
		for _, w := range []struct {
			kind  string
			patch func(types.PatchType, []byte) error
			get   func() (metav1.Object, error)
		}{
			{"Deployment", func(pt types.PatchType, p []byte) error { return deploymentPatch(tenant, "web", pt, p) }, func() (metav1.Object, error) {
				return shared.Admin.AppsV1().Deployments(tenant).Get(ctx, "web", metav1.GetOptions{})
			}},
			{"StatefulSet", statefulSetPatch, func() (metav1.Object, error) {
				return shared.Admin.AppsV1().StatefulSets(tenant).Get(ctx, "db", metav1.GetOptions{})
			}},
		} {
			// The workload's controller may write its status in between
			// (a StatefulSet's, after the last restore): read it again, as
			// nsman does.
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				obj, err := w.get()
				if err != nil {
					return err
				}
				return w.patch(types.MergePatchType, mergePatch(map[string]any{
					"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(), "annotations": map[string]any{status.ReplicasAnnotation: "2"}},
					"spec":     map[string]any{"replicas": 0},
				}))
			}); err != nil {
				t.Errorf("%s scaled down: %v", w.kind, err)
			}
			if err := w.patch(types.MergePatchType, mergePatch(map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: nil}},
				"spec":     map[string]any{"replicas": 2},
			})); err != nil {
				t.Errorf("%s restored: %v", w.kind, err)
			}
			// Scaled down to one replica (params.replicas), that recorded too.
			if err := w.patch(types.MergePatchType, mergePatch(map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: "2", status.ReplicasAsleepAnnotation: "1"}},
				"spec":     map[string]any{"replicas": 1},
			})); err != nil {
				t.Errorf("%s scaled down to 1: %v", w.kind, err)
			}
			if err := w.patch(types.MergePatchType, mergePatch(map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: nil, status.ReplicasAsleepAnnotation: nil}},
				"spec":     map[string]any{"replicas": 2},
			})); err != nil {
				t.Errorf("%s restored from 1: %v", w.kind, err)
			}
		}

		// Each write of a sleep and a wake, each conditional on the
		// resourceVersion: Flux's switch off and back, with its record; the
		// sleep with its record, the wake that drops it; the sleep again,
		// and the record alone removed (a wake that finds the workload
		// changed since).
		for _, w := range []struct {
			name string
			res  schema.GroupVersionResource
			// object is in the tenant namespace; record is the annotation
			// that sleep writes and wake removes.
			object, record string
			sleep, wake    map[string]any
		}{
			{"Deployment", deploymentResource, "web", status.ReplicasAnnotation,
				annotated(map[string]any{status.ReplicasAnnotation: "2"}, map[string]any{"replicas": 0}),
				annotated(map[string]any{status.ReplicasAnnotation: nil}, map[string]any{"replicas": 2})},
			{"CronJob", cronJobResource, "nightly", suspendRecord,
				annotated(map[string]any{suspendRecord: "false"}, map[string]any{"suspend": true}),
				annotated(map[string]any{suspendRecord: nil}, map[string]any{"suspend": false})},
			{"ScaledObject", scaledObjectRes, "web", pausedRecord,
				annotated(map[string]any{pausedReplicas: "0", pausedRecord: ""}, nil),
				annotated(map[string]any{pausedReplicas: nil, pausedRecord: nil}, nil)},
			{"ScaledObject paused before", scaledObjectRes, "paused", pausedRecord,
				annotated(map[string]any{pausedReplicas: "0", pausedRecord: "3"}, nil),
				annotated(map[string]any{pausedReplicas: "3", pausedRecord: nil}, nil)},
			{"Rollout (a scale subresource)", rolloutResource, "canary", status.ReplicasAnnotation,
				annotated(map[string]any{status.ReplicasAnnotation: "3"}, map[string]any{"replicas": 0}),
				annotated(map[string]any{status.ReplicasAnnotation: nil}, map[string]any{"replicas": 3})},
			// Flux first: on an object without annotations.
			{"Rollout without spec or annotations", rolloutResource, "bare", status.ReplicasAnnotation,
				annotated(map[string]any{status.ReplicasAnnotation: "1"}, map[string]any{"replicas": 0}),
				annotated(map[string]any{status.ReplicasAnnotation: nil}, map[string]any{"replicas": 1})},
		} {
			t.Run(w.name, func(t *testing.T) {
				for _, step := range []struct {
					name  string
					patch map[string]any
				}{
					{"Flux switched off", annotated(map[string]any{fluxReconcile: "disabled", reconcileRecord: ""}, nil)},
					{"Flux switched back", annotated(map[string]any{fluxReconcile: nil, reconcileRecord: nil}, nil)},
					{"sleep", w.sleep},
					{"wake", w.wake},
					{"sleep again", w.sleep},
					{"its record removed alone", annotated(map[string]any{w.record: nil}, nil)},
				} {
					if err := patchAs(ctx, saDyn, w.res, tenant, w.object, step.patch, true, metav1.PatchOptions{}); err != nil {
						t.Errorf("%s: %v", step.name, err)
					}
				}
			})
		}
		// Flux's switch on an object whose spec is no map.
		if err := patchAs(ctx, saDyn, scaledObjectRes, tenant, "odd", annotated(map[string]any{fluxReconcile: "disabled", reconcileRecord: "enabled"}, nil), true, metav1.PatchOptions{}); err != nil {
			t.Errorf("Flux switched off on a ScaledObject whose spec is no map: %v", err)
		}
		// A sweep deactivates a manager whose last policy fired, in nsman's
		// own namespace as in any other: the fence leaves managers to RBAC.
		if err := patchAs(ctx, saDyn, nsmancluster.ManagerResource, own, ownManager, map[string]any{"spec": map[string]any{"deactivated": true}}, true, metav1.PatchOptions{}); err != nil {
			t.Errorf("a manager in %s deactivated: %v", own, err)
		}

		// A DELETE of a namespace nobody protects, with nsman's
		// preconditions.
		doomedNS, err := shared.Admin.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sa.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &doomedNS.UID, ResourceVersion: &doomedNS.ResourceVersion},
		}); err != nil {
			t.Errorf("DELETE of namespace %s: %v", doomed, err)
		}
	})

	// The policy holds nsman's ServiceAccount alone: an admin's writes are
	// not evaluated.
	t.Run("an admin is not affected", func(t *testing.T) {
		admin := shared.Admin
		if _, err := admin.CoreV1().Namespaces().Patch(ctx, tenant, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"},"annotations":{"example.com/owner":"admin"}}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("admin labels a namespace: %v", err)
		}
		if _, err := admin.CoreV1().Namespaces().Patch(ctx, "kube-system", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"}}}`), metav1.PatchOptions{DryRun: dryRun}); err != nil {
			t.Errorf("admin labels kube-system: %v", err)
		}
		if err := admin.CoreV1().Namespaces().Delete(ctx, own, metav1.DeleteOptions{DryRun: dryRun}); err != nil {
			t.Errorf("admin deletes namespace %s (dry run): %v", own, err)
		}
		if _, err := admin.AppsV1().Deployments(tenant).Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/web:2"}]}}}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("admin changes a Deployment's image: %v", err)
		}
		if _, err := admin.AppsV1().Deployments(own).Patch(ctx, "fence-"+tenant, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("admin scales a Deployment in %s: %v", own, err)
		}
		if _, err := admin.BatchV1().CronJobs(own).Patch(ctx, ownPrefix+"nightly", types.MergePatchType, []byte(`{"spec":{"schedule":"* * * * *"}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("admin changes a CronJob's schedule in %s: %v", own, err)
		}
	})

	// The API server type-checks the policy against the kinds it matches:
	// no expression it cannot check (a field that does not exist, say).
	t.Run("type checking", func(t *testing.T) {
		var p *admissionregistrationv1.ValidatingAdmissionPolicy
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			p, err = shared.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "nsman", metav1.GetOptions{})
			return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil, nil
		})
		if err != nil {
			t.Fatalf("the policy's status was not written: %v", err)
		}
		if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
			t.Errorf("type checking warns: %+v", w)
		}
	})
}

// basePolicy reads deploy/base/admission-policy.yaml: the policy named
// name and its binding (nsman: the fence around nsman's ServiceAccount;
// nsman-records: nsman's records).
func basePolicy(t *testing.T, name string) (policy, binding *unstructured.Unstructured) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "base", "admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := nsmantest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return findNamed(t, objs, policyKind, name), findNamed(t, objs, bindingKind, name)
}

// findNamed returns the one object of kind named name among objs.
func findNamed(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %ss named %s, want 1", len(found), kind, name)
	}
	return found[0]
}

// recordsSuffix ends the name of the policy, and binding, that keeps
// nsman's records nsman's: <name of the fence>-records.
const recordsSuffix = "-records"

// The variable of the records policy that holds the users nsman runs as.
const writersVariable = "nsmanServiceAccounts"

// writersFor is the users the records policy lets write records, as its
// first variable says.
func writersFor(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	p := typedPolicy(t, obj)
	if len(p.Spec.Variables) == 0 || p.Spec.Variables[0].Name != writersVariable {
		t.Fatalf("%s: variables %+v, want %s first (overlays patch it by its index)", identity(obj), p.Spec.Variables, writersVariable)
	}
	return p.Spec.Variables[0].Expression
}

// typedPolicy converts a rendered policy, failing on a field that
// admissionregistration.k8s.io/v1 does not know.
func typedPolicy(t *testing.T, obj *unstructured.Unstructured) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, p, true); err != nil {
		t.Fatalf("%s: %v", identity(obj), err)
	}
	return p
}

// The variable of the policy that holds the configured protected
// namespaces, and the CEL list it holds.
const configuredVariable = "configuredProtectedNamespaces"

func celList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func usernameCondition(namespace, name string) string {
	return fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", namespace, name)
}

// policyFor is the configured protected namespaces and the ServiceAccount
// a policy fences, as its first variable and its match condition say.
func policyFor(t *testing.T, obj *unstructured.Unstructured) (configured, username string) {
	t.Helper()
	p := typedPolicy(t, obj)
	if len(p.Spec.Variables) == 0 || p.Spec.Variables[0].Name != configuredVariable {
		t.Fatalf("%s: variables %+v, want %s first (overlays patch it by its index)", identity(obj), p.Spec.Variables, configuredVariable)
	}
	if len(p.Spec.MatchConditions) != 1 {
		t.Fatalf("%s: matchConditions %+v, want the ServiceAccount's alone", identity(obj), p.Spec.MatchConditions)
	}
	return p.Spec.Variables[0].Expression, p.Spec.MatchConditions[0].Expression
}

// protectedFlag is what the CronJob's arguments protect beside the floor:
// the values of --protected-namespaces, else nsman's default.
func protectedFlag(t *testing.T, args []string) []string {
	t.Helper()
	var found []string
	set := false
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--protected-namespaces="):
			set = true
			if v := strings.TrimPrefix(a, "--protected-namespaces="); v != "" {
				found = append(found, strings.Split(v, ",")...)
			}
		case a == "--protected-namespaces" && i+1 < len(args):
			set = true
			found = append(found, strings.Split(args[i+1], ",")...)
		}
	}
	if !set {
		return defaultProtected(t)
	}
	if found == nil {
		found = []string{}
	}
	return found
}

var defaultFlag = regexp.MustCompile(`--protected-namespaces strings .*\(default \[([^\]]*)\]\)`)

// defaultProtected is nsman's default --protected-namespaces, as nsman
// sweep --help shows it.
func defaultProtected(t *testing.T) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cmd.Execute(t.Context(), []string{"sweep", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("nsman sweep --help: exit %d\n%s", code, stderr.String())
	}
	m := defaultFlag.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("nsman sweep --help shows no default of --protected-namespaces:\n%s", stdout.String())
	}
	return strings.Split(m[1], ",")
}

// wantPolicyAgrees checks a build of the manifests (kustomize's, the
// chart's): its fence, named after the CronJob's ServiceAccount, protects
// what its CronJob's --protected-namespaces does and fences that
// ServiceAccount; its records policy lets that ServiceAccount write
// records; each is bound to deny.
func wantPolicyAgrees(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	cj := typedCronJob(t, cronJobObject(t, objs))
	sa := cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
	configured, username := policyFor(t, findNamed(t, objs, policyKind, sa))
	if want := celList(protectedFlag(t, nsmanContainer(t, cj).Args)); configured != want {
		t.Errorf("the policy's %s is %s, the CronJob's --protected-namespaces %s", configuredVariable, configured, want)
	}
	if want := usernameCondition(cj.Namespace, sa); username != want {
		t.Errorf("the policy matches %s, want the CronJob's ServiceAccount: %s", username, want)
	}
	user := fmt.Sprintf("'system:serviceaccount:%s:%s'", cj.Namespace, sa)
	if writers := writersFor(t, findNamed(t, objs, policyKind, sa+recordsSuffix)); !strings.HasPrefix(writers, "["+user) {
		t.Errorf("the records policy lets %s write records, want the CronJob's ServiceAccount first: %s", writers, user)
	}
	for _, name := range []string{sa, sa + recordsSuffix} {
		b := findNamed(t, objs, bindingKind, name)
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(b.Object, binding, true); err != nil {
			t.Fatal(err)
		}
		if binding.Spec.PolicyName != name || !slices.Equal(binding.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) || binding.Spec.ParamRef != nil || binding.Spec.MatchResources != nil {
			t.Errorf("binding %s %+v, want policy %s with validationActions [Deny] alone", name, binding.Spec, name)
		}
	}
}

// kustomizationSnippet is the overlay that docs/kustomize.md shows for
// protecting more namespaces: the first yaml block after its heading.
func kustomizationSnippet(t *testing.T) string {
	t.Helper()
	docs, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "kustomize.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(docs), "\n## The admission policy\n")
	if !ok {
		t.Fatal("docs/kustomize.md has no section \"The admission policy\"")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("docs/kustomize.md: no yaml block in \"The admission policy\"")
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

// TestAdmissionPolicyAgreesWithTheCronJob: in deploy/, in each overlay and
// in the overlay docs/kustomize.md shows for protecting more namespaces,
// the policy protects what --protected-namespaces (or nsman's default)
// does and fences the ServiceAccount the CronJob runs as. Kustomize has no
// single place for the list: this keeps the two in step.
func TestAdmissionPolicyAgreesWithTheCronJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if got, want := defaultProtected(t), []string{"default", "namespace-manager"}; !slices.Equal(got, want) {
		t.Fatalf("nsman's default --protected-namespaces %q; the base's policy and the chart's default assume %q", got, want)
	}
	dirs := []string{"deploy"}
	overlays, err := os.ReadDir(filepath.Join(nsmantest.RepoRoot(), "deploy", "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overlays {
		dirs = append(dirs, filepath.Join("deploy", "overlays", o.Name()))
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) { wantPolicyAgrees(t, kustomize(ctx, t, dir)) })
	}

	t.Run("docs/kustomize.md's overlay", func(t *testing.T) {
		snippet := kustomizationSnippet(t)
		if !strings.Contains(snippet, "../../base") {
			t.Fatalf("the overlay in docs/kustomize.md does not build on ../../base:\n%s", snippet)
		}
		// Beside the test's files, with base where the overlay finds it
		// (kustomize takes no absolute path).
		dir := t.TempDir()
		base, err := filepath.Rel(dir, filepath.Join(nsmantest.RepoRoot(), "deploy", "base"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(strings.ReplaceAll(snippet, "../../base", base)), 0o600); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(nsmantest.RepoRoot(), dir)
		if err != nil {
			t.Fatal(err)
		}
		objs := kustomize(ctx, t, rel)
		wantPolicyAgrees(t, objs)
		if got := protectedFlag(t, nsmanContainer(t, typedCronJob(t, cronJobObject(t, objs))).Args); slices.Equal(got, defaultProtected(t)) {
			t.Errorf("the overlay in docs/kustomize.md protects %q, nsman's default: it shows nothing", got)
		}
	})
}

// chartPolicy is the base's policy as the chart renders it for release
// namespace, objects named name, configured protected namespaces and
// patchable ("": the base's): the same rules, another ServiceAccount and
// lists.
func chartPolicy(t *testing.T, namespace, name string, configured []string, patchable string) (policy, binding map[string]any) {
	t.Helper()
	p, b := basePolicy(t, "nsman")
	p, b = p.DeepCopy(), b.DeepCopy()
	p.SetName(name)
	b.SetName(name)
	if err := unstructured.SetNestedField(b.Object, name, "spec", "policyName"); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(p.Object, "spec")
	vars := spec["variables"].([]any)
	vars[0].(map[string]any)["expression"] = celList(configured)
	if patchable != "" {
		vars[nsmantest.PatchableIndex].(map[string]any)["expression"] = patchable
	}
	conds := spec["matchConditions"].([]any)
	conds[0].(map[string]any)["expression"] = usernameCondition(namespace, name)
	p.Object["spec"] = spec
	return p.Object, b.Object
}

// withoutChartMetadata is obj without the labels and annotations the chart
// adds.
func withoutChartMetadata(obj *unstructured.Unstructured) map[string]any {
	o := obj.DeepCopy()
	o.SetLabels(nil)
	o.SetAnnotations(nil)
	return o.Object
}

// TestHelmChartAdmissionPolicyFollowsProtectedNamespaces: the chart renders
// deploy/base's policy and binding, with the rules unchanged, for its own
// ServiceAccount and with protectedNamespaces, the value that sets
// --protected-namespaces, as the configured protected namespaces (and
// sleep.patchable as configuredPatchable);
// admissionPolicy.enabled=false renders neither; --protected-namespaces in
// extraArgs, which the policy would not see, is refused.
func TestHelmChartAdmissionPolicyFollowsProtectedNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name       string
		flags      []string
		namespace  string
		fullname   string
		configured []string
		patchable  string
	}{
		{"defaults", nil, chartNamespace, "nsman", []string{"default", "namespace-manager"}, ""},
		{"protected namespaces", []string{"--set-json", `protectedNamespaces=["default","prod","staging"]`}, chartNamespace, "nsman", []string{"default", "prod", "staging"}, ""},
		{"no protected namespace beyond the floor", []string{"--set-json", "protectedNamespaces=[]"}, chartNamespace, "nsman", []string{}, ""},
		{"another release namespace and name", []string{"--namespace", "platform", "--set", "fullnameOverride=sweeper", "--set-json", `protectedNamespaces=["prod"]`}, "platform", "sweeper", []string{"prod"}, ""},
		{"ci/sweep-values.yaml", []string{"-f", filepath.Join(chartDir, "ci", "sweep-values.yaml")}, chartNamespace, "nsman", []string{"default", "namespace-manager", "production"}, ""},
		{"ci/flux-suspend-values.yaml", []string{"-f", filepath.Join(chartDir, "ci", "flux-suspend-values.yaml")}, chartNamespace, "nsman", []string{"default", "namespace-manager"}, fluxSuspendPatchable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.flags...)
			wantPolicyAgrees(t, objs)
			wantPolicy, wantBinding := chartPolicy(t, tc.namespace, tc.fullname, tc.configured, tc.patchable)
			for _, c := range []struct {
				kind string
				want map[string]any
			}{{policyKind, wantPolicy}, {bindingKind, wantBinding}} {
				got := withoutChartMetadata(findNamed(t, objs, c.kind, tc.fullname))
				if !reflect.DeepEqual(got, c.want) {
					g, _ := json.MarshalIndent(got, "", "  ")
					w, _ := json.MarshalIndent(c.want, "", "  ")
					t.Errorf("the chart's %s, its labels set aside:\n%s\nwant deploy/base's for this release:\n%s", c.kind, g, w)
				}
			}
		})
	}

	t.Run("admissionPolicy.enabled=false", func(t *testing.T) {
		objs := helmTemplate(t, "--set", "admissionPolicy.enabled=false")
		for _, o := range objs {
			if (o.GetKind() == policyKind || o.GetKind() == bindingKind) && o.GetName() == "nsman" {
				t.Errorf("%s rendered with admissionPolicy.enabled=false", identity(o))
			}
		}
	})

	t.Run("--protected-namespaces in extraArgs", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set-json", `extraArgs=["--protected-namespaces=prod"]`)
		if err == nil || !strings.Contains(err.Error(), "set protectedNamespaces, not --protected-namespaces") {
			t.Errorf("helm template with --protected-namespaces in extraArgs: %v, want it refused", err)
		}
		if _, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set", "admissionPolicy.enabled=false", "--set-json", `extraArgs=["--protected-namespaces=prod"]`); err != nil {
			t.Errorf("helm template with --protected-namespaces in extraArgs and no policy: %v", err)
		}
	})
}

// TestHelmChartAdmissionPolicyRefusesWhatNsmanWouldNot installs the
// chart's ServiceAccount, RBAC and admission policy (named
// nsman-fence-test, beside deploy/base's) with protectedNamespaces naming
// a test namespace, then runs a sweep as that ServiceAccount without
// --protected-namespaces, as an nsman that protected less than it should:
// its DELETE of that namespace is refused by the API server, with the
// policy's message, while its DELETE of another goes through. The same
// ServiceAccount, granted to patch them, may put a CronJob, a ScaledObject
// and a Rollout to sleep, in that namespace not, and change nothing else.
func TestHelmChartAdmissionPolicyRefusesWhatNsmanWouldNot(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const name = "nsman-fence-test"
	protected, other, home := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	// Not the records policy, which would refuse every other nsman its
	// records (TestRecordsPolicyKeepsRuleRecordsNsmans tries deploy/base's,
	// which the chart renders by default), nor the roles for the built-in
	// ones, which would give every test's users NamespaceManagers
	// (TestTeamsManageManagersThroughBuiltInRoles tries them).
	objs := helmTemplate(t, "--set", "fullnameOverride="+name, "--set", "recordsPolicy.enabled=false", "--set", "rbac.aggregateClusterRoles=false",
		"--set-json", fmt.Sprintf(`protectedNamespaces=["default","namespace-manager",%q]`, protected))
	kinds := map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, policyKind: true, bindingKind: true}
	for _, o := range objs {
		if !kinds[o.GetKind()] {
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		e.Apply(t, data)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.Dynamic.Resource(bindingResource).Delete(ctx, name, metav1.DeleteOptions{})
		_ = e.Dynamic.Resource(policyResource).Delete(ctx, name, metav1.DeleteOptions{})
		_ = e.Dynamic.Resource(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")).Delete(ctx, name, metav1.DeleteOptions{})
		_ = e.Dynamic.Resource(rbacv1.SchemeGroupVersion.WithResource("clusterroles")).Delete(ctx, name, metav1.DeleteOptions{})
		_ = shared.Admin.CoreV1().ServiceAccounts(chartNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	cfg, err := shared.ServiceAccountConfig(ctx, chartNamespace, name)
	if err != nil {
		t.Fatal(err)
	}
	sa := &nsmantest.Env{Cluster: shared, Kubeconfig: filepath.Join(t.TempDir(), "fence-test.kubeconfig"), User: cluster.ServiceAccountUser(chartNamespace, name)}
	if err := cluster.WriteKubeconfig(sa.Kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	policy := "ValidatingAdmissionPolicy '" + name + "'"
	// In force once it refuses the ServiceAccount a DELETE (a dry run).
	kube := saClient(t, sa.Kubeconfig)
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = kube.CoreV1().Namespaces().Delete(ctx, protected, metav1.DeleteOptions{DryRun: dryRun})
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), policy), nil
	}); err != nil {
		t.Fatalf("the chart's policy does not refuse a DELETE of %s: %v (%v)", protected, last, err)
	}

	caseID := protected
	createManager(t, managerObj(home, "protected", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(protected)))
	createManager(t, managerObj(home, "other", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(other)))
	res := sa.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home)
	wantCode(t, res, cmd.ExitFailed)
	got := wantState(t, res, home, "protected", report.StateFailed)
	if want := "may not delete namespace " + protected + ": it is protected"; !strings.Contains(got.Message, policy) || !strings.Contains(got.Message, want) {
		t.Errorf("message %q, want the refusal of %s: %q", got.Message, policy, want)
	}
	if e.NamespaceGoneOrTerminating(t, protected) {
		t.Errorf("namespace %s deleted", protected)
	}
	wantState(t, res, home, "other", report.StateFired)
	if !e.NamespaceGoneOrTerminating(t, other) {
		t.Errorf("namespace %s not deleted", other)
	}

	// The other kinds nsman puts to sleep, under the chart's policy.
	nsmantest.InstallFixtureCRDs(t, e.Dynamic)
	sleepers(ctx, t, e.Dynamic, home, "")
	sleepers(ctx, t, e.Dynamic, protected, "")
	saDyn := saDynamic(t, sa.Kubeconfig)
	grantPatch(ctx, t, saDyn, chartNamespace, name)
	for _, tc := range []struct {
		name      string
		res       schema.GroupVersionResource
		namespace string
		object    string
		patch     map[string]any
		// want is what the refusal says; "" when the write is allowed.
		want string
	}{
		{"a CronJob suspended", cronJobResource, home, "nightly", annotated(map[string]any{suspendRecord: "false"}, map[string]any{"suspend": true}), ""},
		{"a ScaledObject paused", scaledObjectRes, home, "web", annotated(map[string]any{pausedReplicas: "0", pausedRecord: ""}, nil), ""},
		{"a Rollout scaled down", rolloutResource, home, "canary", annotated(map[string]any{status.ReplicasAnnotation: "3"}, map[string]any{"replicas": 0}), ""},
		{"Flux switched off on a Rollout without spec or annotations", rolloutResource, home, "bare", annotated(map[string]any{fluxReconcile: "disabled", reconcileRecord: ""}, nil), ""},
		{"a CronJob's schedule", cronJobResource, home, "nightly", map[string]any{"spec": map[string]any{"schedule": "* * * * *"}},
			cronJobAllowed + "CronJob " + home + "/nightly, not spec.schedule"},
		{"a ScaledObject's spec", scaledObjectRes, home, "web", map[string]any{"spec": map[string]any{"maxReplicaCount": 0}},
			scaledObjectAllowed + "ScaledObject " + home + "/web, not spec.maxReplicaCount"},
		{"a Rollout's labels", rolloutResource, home, "canary", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "x"}}},
			scaleKindAllowed + "Rollout " + home + "/canary, not metadata.labels"},
		{"a CronJob suspended in a protected namespace", cronJobResource, protected, "nightly", annotated(map[string]any{suspendRecord: "false"}, map[string]any{"suspend": true}),
			"may not change CronJob " + protected + "/nightly: namespace " + protected + " is protected"},
		{"a Rollout scaled down in a protected namespace", rolloutResource, protected, "canary", annotated(map[string]any{status.ReplicasAnnotation: "3"}, map[string]any{"replicas": 0}),
			"may not change Rollout " + protected + "/canary: namespace " + protected + " is protected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := patchAs(ctx, saDyn, tc.res, tc.namespace, tc.object, tc.patch, true, metav1.PatchOptions{})
			switch {
			case tc.want != "":
				deniedBy(t, err, policy, tc.want)
			case err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// RecordsPolicy names the ValidatingAdmissionPolicy of
// deploy/base/admission-policy.yaml that keeps nsman's records nsman's,
// which its refusals name.
const RecordsPolicy = "ValidatingAdmissionPolicy 'nsman-records'"

// recordsRefusal is what the records policy's refusals say.
const recordsRefusal = "nsman.k8s.consol.de/rule-* annotations are written by nsman only"

// tenantClient is a ServiceAccount of namespace home that may get, update
// and patch every namespace, its status and finalize subresources
// included, and create namespaces: more than a platform gives a tenant,
// which lets nothing but the admission policy refuse its writes.
func tenantClient(ctx context.Context, t *testing.T, home string) (kubernetes.Interface, string) {
	t.Helper()
	const sa = "tenant"
	name := "nsman-test-tenant-" + home
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"namespaces", "namespaces/status", "namespaces/finalize"}, Verbs: []string{"get", "update", "patch", "create"},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: home, Name: sa}}}
	if _, err := shared.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = shared.Admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	cfg, err := shared.ServiceAccountConfig(ctx, home, sa)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, cluster.ServiceAccountUser(home, sa)
}

// TestRecordsPolicyKeepsRuleRecordsNsmans: under deploy/base's policies, a
// tenant ServiceAccount that may patch, update and create namespaces is
// refused adding, changing or removing a rule's record
// (nsman.k8s.consol.de/rule-*) on a namespace, whichever way it writes,
// with the policy's message, and the record stays as nsman wrote it; it
// may still set a hold, a touch and an expiry date, and change the
// namespace otherwise. nsman's sweep writes its records (a claim, then
// the record of the action) with the policy in force, and an admin
// (system:masters) is not held.
func TestRecordsPolicyKeepsRuleRecordsNsmans(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	home := shared.Namespace(t)
	target := labelled(t, home, 1)[0]
	tenant, user := tenantClient(ctx, t, home)
	forged := status.PairAnnotationPrefix + "forged"
	patch := func(pt types.PatchType, data string, opts metav1.PatchOptions) error {
		_, err := tenant.CoreV1().Namespaces().Patch(ctx, target, pt, []byte(data), opts)
		return err
	}
	// In force once it refuses the tenant a forged record.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}"}}}`, forged), metav1.PatchOptions{DryRun: dryRun})
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), RecordsPolicy), nil
	}); err != nil {
		t.Fatalf("the records policy does not refuse %s a forged record: %v (%v)", user, last, err)
	}

	// nsman writes its records under the policy.
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "recorded", home, []any{ttlPolicy("now", 0, webhookAction(recv.URL+"/now"))}, selecting(home)))
	rule := e.Manager(t, home, "recorded")
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	wantPairs(t, res, home, "recorded", []string{target}, report.StateFired, "the sweep")
	key := status.PairAnnotation(rule.GetUID())
	st, ns := pairRecord(t, target, rule.GetUID())
	if st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.Claim != nil {
		t.Fatalf("nsman's record on %s: %+v, want its WEBHOOK's success", target, st)
	}
	record := ns.Annotations[key]

	succeeded := st
	succeeded.LastAction.Time = time.Now().UTC()
	changed, err := json.Marshal(succeeded)
	if err != nil {
		t.Fatal(err)
	}
	pointer := "/metadata/annotations/" + strings.ReplaceAll(key, "/", "~1")
	without := func() *corev1.Namespace {
		t.Helper()
		ns, err := tenant.CoreV1().Namespaces().Get(ctx, target, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(ns.Annotations, key)
		return ns
	}
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			do   func() error
			// what names the record refused.
			what string
		}{
			{"add a record", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}"}}}`, forged), metav1.PatchOptions{})
			}, forged},
			{"change nsman's record", func() error {
				return patch(types.MergePatchType, string(mergePatch(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: string(changed)}}})), metav1.PatchOptions{})
			}, key},
			{"remove nsman's record", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, key), metav1.PatchOptions{})
			}, key},
			{"remove it with a JSON patch", func() error {
				return patch(types.JSONPatchType, fmt.Sprintf(`[{"op":"remove","path":%q}]`, pointer), metav1.PatchOptions{})
			}, key},
			{"change it with a strategic merge patch", func() error {
				return patch(types.StrategicMergePatchType, string(mergePatch(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: "{}"}}})), metav1.PatchOptions{})
			}, key},
			{"replace the namespace without it", func() error {
				_, err := tenant.CoreV1().Namespaces().Update(ctx, without(), metav1.UpdateOptions{})
				return err
			}, key},
			{"add one with an annotation of its own", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}","example.com/owner":"tenant",%q:"2030-01-01T00:00:00Z"}}}`, forged, status.HoldAnnotation), metav1.PatchOptions{})
			}, forged},
			{"create a namespace with one", func() error {
				_, err := tenant.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
					GenerateName: "nsman-test-forged-", Annotations: map[string]string{forged: "{}"},
				}}, metav1.CreateOptions{DryRun: dryRun})
				return err
			}, forged},
		} {
			t.Run(tc.name, func(t *testing.T) {
				deniedBy(t, tc.do(), RecordsPolicy, recordsRefusal)
				deniedBy(t, tc.do(), RecordsPolicy, user+" may not add, change or remove "+tc.what)
			})
		}
		// The status and finalize subresources write a namespace's
		// metadata too: the policy holds them as the namespace itself.
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"status", func() error {
				_, err := tenant.CoreV1().Namespaces().UpdateStatus(ctx, without(), metav1.UpdateOptions{})
				return err
			}},
			{"finalize", func() error {
				_, err := tenant.CoreV1().Namespaces().Finalize(ctx, without(), metav1.UpdateOptions{})
				return err
			}},
		} {
			t.Run("remove it through "+tc.name, func(t *testing.T) {
				deniedBy(t, tc.do(), RecordsPolicy, user+" may not add, change or remove "+key)
			})
		}
		got, err := shared.Admin.CoreV1().Namespaces().Get(ctx, target, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[key] != record {
			t.Errorf("nsman's record on %s is %q, want %q, as nsman wrote it", target, got.Annotations[key], record)
		}
		if _, ok := got.Annotations[forged]; ok {
			t.Errorf("a forged record %s on %s", forged, target)
		}
	})

	t.Run("allowed", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"a hold", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, status.HoldAnnotation, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), metav1.PatchOptions{})
			}},
			{"a touch", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, policy.TouchedAnnotation, time.Now().UTC().Format(time.RFC3339)), metav1.PatchOptions{})
			}},
			{"a wake", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, status.WakeAnnotation, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), metav1.PatchOptions{})
			}},
			{"the wake removed", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, status.WakeAnnotation), metav1.PatchOptions{})
			}},
			{"an expiry date", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, policy.ExpiresAnnotation, time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)), metav1.PatchOptions{})
			}},
			{"the hold removed", func() error {
				return patch(types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, status.HoldAnnotation), metav1.PatchOptions{})
			}},
			{"a label and an annotation of its own", func() error {
				return patch(types.MergePatchType, `{"metadata":{"labels":{"team":"tenant"},"annotations":{"example.com/owner":"tenant"}}}`, metav1.PatchOptions{})
			}},
			{"the namespace replaced with the record as it is", func() error {
				ns, err := tenant.CoreV1().Namespaces().Get(ctx, target, metav1.GetOptions{})
				if err != nil {
					return err
				}
				ns.Annotations["example.com/note"] = "replaced"
				_, err = tenant.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
				return err
			}},
			{"a namespace created without a record", func() error {
				_, err := tenant.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
					GenerateName: "nsman-test-tenant-", Annotations: map[string]string{status.HoldAnnotation: "2030-01-01T00:00:00Z"},
				}}, metav1.CreateOptions{DryRun: dryRun})
				return err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.do(); err != nil {
					t.Error(err)
				}
			})
		}
	})

	// system:masters, the break-glass identity, is not held.
	t.Run("an admin is not affected", func(t *testing.T) {
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, target, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, key)), metav1.PatchOptions{DryRun: dryRun}); err != nil {
			t.Errorf("admin removes a record: %v", err)
		}
	})

	// The API server type-checks the policy against Namespace.
	t.Run("type checking", func(t *testing.T) {
		var p *admissionregistrationv1.ValidatingAdmissionPolicy
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			p, err = shared.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "nsman-records", metav1.GetOptions{})
			return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil, nil
		})
		if err != nil {
			t.Fatalf("the policy's status was not written: %v", err)
		}
		if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
			t.Errorf("type checking warns: %+v", w)
		}
	})

	if n := len(recv.Deliveries()); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

// TestRuleRecordHidesTheRuleUID: a tenant sets a hold that does not parse
// on its namespace, and the rule that waits on it records that it ignored
// it; nothing the tenant can read on its namespace holds the rule's UID.
func TestRuleRecordHidesTheRuleUID(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	home := shared.Namespace(t)
	target := labelled(t, home, 1)[0]
	tenant, _ := tenantClient(ctx, t, home)
	if _, err := tenant.CoreV1().Namespaces().Patch(ctx, target, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"soon"}}}`, status.HoldAnnotation)), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(home, "waits", home, []any{ttlPolicy("in an hour", 3600, deleteAction)}, selecting(home)))
	uid := string(e.Manager(t, home, "waits").GetUID())
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "waits", target); p.State != report.StateWaiting || p.HoldIgnored == "" {
		t.Fatalf("pair: %q (%s), hold ignored %q, want waiting with the hold ignored", p.State, p.Message, p.HoldIgnored)
	}
	ns, err := tenant.CoreV1().Namespaces().Get(ctx, target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	records := 0
	for k, v := range ns.Annotations {
		if strings.HasPrefix(k, status.PairAnnotationPrefix) {
			records++
		}
		if strings.Contains(k, uid) || strings.Contains(v, uid) {
			t.Errorf("annotation %s=%s on %s holds the rule's UID %s", k, v, target, uid)
		}
	}
	if records != 1 {
		t.Errorf("%d records on %s, want the rule's one: %v", records, target, ns.Annotations)
	}
}

// TestLegacyRuleRecordIsReadAndMoved: a record kept under the rule's UID,
// as nsman wrote it before, is the rule's: its policy that fired does not
// fire again, and the next write of the record moves it under the key
// that hides the UID.
func TestLegacyRuleRecordIsReadAndMoved(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	target := labelled(t, home, 1)[0]
	recv := nsmantest.NewReceiver(t)
	// A stage, then a final policy in an hour.
	now := ttlPolicy("now", 0, webhookAction(recv.URL+"/now"))
	now["final"] = false
	createManager(t, managerObj(home, "moved", home, []any{now, ttlPolicy("in an hour", 3600, webhookAction(recv.URL+"/later"))}, selecting(home)))
	rule := e.Manager(t, home, "moved")
	args := []string{"-l", caseLabel + "=" + home, "--trusted-namespaces", home}
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	key, legacy := status.PairAnnotation(rule.GetUID()), status.PairAnnotationPrefix+string(rule.GetUID())
	_, ns := pairRecord(t, target, rule.GetUID())
	record := ns.Annotations[key]
	if record == "" || len(recv.Deliveries()) != 1 {
		t.Fatalf("first sweep: record %q, %d deliveries, want a record and 1", record, len(recv.Deliveries()))
	}
	// As nsman kept it before; and a hold that does not parse, which the
	// rule records.
	pointer := func(k string) string { return "/metadata/annotations/" + strings.ReplaceAll(k, "/", "~1") }
	move := fmt.Sprintf(`[{"op":"test","path":%q,"value":%q},{"op":"remove","path":%q},{"op":"add","path":%q,"value":%q},{"op":"add","path":%q,"value":"soon"}]`,
		pointer(key), record, pointer(key), pointer(legacy), record, pointer(status.HoldAnnotation))
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), target, types.JSONPatchType, []byte(move), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "moved", target); p.State != report.StateWaiting || p.HoldIgnored == "" {
		t.Errorf("pair: %q (%s), hold ignored %q, want waiting for the next policy, the hold ignored", p.State, p.Message, p.HoldIgnored)
	}
	if n := len(recv.Deliveries()); n != 1 {
		t.Errorf("%d deliveries, want 1: the record under the rule's UID was not read", n)
	}
	st, ns := pairRecord(t, target, rule.GetUID())
	if _, ok := ns.Annotations[legacy]; ok {
		t.Errorf("the record under the rule's UID is still there: %v", ns.Annotations)
	}
	if st.LastAction == nil || st.LastAction.Policy != "now" || st.LastAction.Result != report.ResultSucceeded || st.IgnoredHold == "" {
		t.Errorf("record %+v, want the first policy's success and the hold ignored", st)
	}
}

// TestHelmChartRecordsPolicy: the chart renders deploy/base's records
// policy and binding, with the rules unchanged, by default, letting its own
// ServiceAccount and recordsPolicy.extraWriters write the records;
// recordsPolicy.enabled=false renders neither (and leaves the fence);
// a writer that would break the expression is refused.
func TestHelmChartRecordsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flags    []string
		fullname string
		writers  string
	}{
		{"defaults", nil, "nsman", "['system:serviceaccount:" + chartNamespace + ":nsman']"},
		{"another release namespace and name", []string{"--namespace", "platform", "--set", "fullnameOverride=sweeper"}, "sweeper", "['system:serviceaccount:platform:sweeper']"},
		{"extra writers", []string{"--set-json", `recordsPolicy.extraWriters=["system:serviceaccount:other:nsman"]`}, "nsman",
			"['system:serviceaccount:" + chartNamespace + ":nsman', 'system:serviceaccount:other:nsman']"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.flags...)
			wantPolicyAgrees(t, objs)
			p, b := basePolicy(t, "nsman"+recordsSuffix)
			p, b = p.DeepCopy(), b.DeepCopy()
			name := tc.fullname + recordsSuffix
			p.SetName(name)
			b.SetName(name)
			if err := unstructured.SetNestedField(b.Object, name, "spec", "policyName"); err != nil {
				t.Fatal(err)
			}
			vars, _, _ := unstructured.NestedSlice(p.Object, "spec", "variables")
			vars[0].(map[string]any)["expression"] = tc.writers
			if err := unstructured.SetNestedSlice(p.Object, vars, "spec", "variables"); err != nil {
				t.Fatal(err)
			}
			for _, want := range []*unstructured.Unstructured{p, b} {
				got := withoutChartMetadata(findNamed(t, objs, want.GetKind(), name))
				if !reflect.DeepEqual(got, want.Object) {
					g, _ := json.MarshalIndent(got, "", "  ")
					w, _ := json.MarshalIndent(want.Object, "", "  ")
					t.Errorf("the chart's %s, its labels set aside:\n%s\nwant deploy/base's for this release:\n%s", want.GetKind(), g, w)
				}
			}
		})
	}

	t.Run("recordsPolicy.enabled=false", func(t *testing.T) {
		objs := helmTemplate(t, "--set", "recordsPolicy.enabled=false")
		for _, o := range objs {
			if (o.GetKind() == policyKind || o.GetKind() == bindingKind) && o.GetName() == "nsman"+recordsSuffix {
				t.Errorf("%s rendered with recordsPolicy.enabled=false", identity(o))
			}
		}
		findNamed(t, objs, policyKind, "nsman")
	})

	t.Run("a writer that is no user name", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set-json", `recordsPolicy.extraWriters=["x' || true || '"]`)
		if err == nil || !strings.Contains(err.Error(), "is no user name") {
			t.Errorf("helm template with a quote in recordsPolicy.extraWriters: %v, want it refused", err)
		}
	})
}
