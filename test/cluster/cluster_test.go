package cluster

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func testContext(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 200ms until it holds or ctx ends.
func eventually(t *testing.T, ctx context.Context, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func podTemplate(labels map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "main", Image: "registry.invalid/test:1"}},
		},
	}
}

func testJob(name string, completions int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions:  ptr.To(completions),
			Parallelism:  ptr.To[int32](2),
			BackoffLimit: ptr.To[int32](0),
			Template:     podTemplate(map[string]string{"component": "main"}, corev1.RestartPolicyNever),
		},
	}
}

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, corev1.RestartPolicyAlways),
		},
	}
}

func podPhases(ctx context.Context, cs kubernetes.Interface, ns string, selector map[string]string) (map[corev1.PodPhase]int, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	if err != nil {
		return nil, err
	}
	phases := map[corev1.PodPhase]int{}
	for _, p := range pods.Items {
		phases[p.Status.Phase]++
	}
	return phases, nil
}

func TestJobPodsSucceed(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 2*time.Minute)
	ns := shared.Namespace(t)
	job, err := shared.Admin.BatchV1().Jobs(ns).Create(ctx, testJob("three", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "job complete", func(ctx context.Context) (bool, error) {
		j, err := shared.Admin.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				return false, errors.New("job failed: " + c.Message)
			}
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	phases, err := podPhases(ctx, shared.Admin, ns, map[string]string{batchv1.JobNameLabel: job.Name})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[corev1.PodPhase]int{corev1.PodSucceeded: 3}; !maps.Equal(phases, want) {
		t.Fatalf("pod phases = %v, want %v", phases, want)
	}
}

func TestDeploymentPodsRun(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 2*time.Minute)
	ns := shared.Namespace(t)
	d, err := shared.Admin.AppsV1().Deployments(ns).Create(ctx, testDeployment("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "two running pods", func(ctx context.Context) (bool, error) {
		phases, err := podPhases(ctx, shared.Admin, ns, d.Spec.Selector.MatchLabels)
		return phases[corev1.PodRunning] == 2, err
	})
	eventually(t, ctx, "deployment available", func(ctx context.Context) (bool, error) {
		d, err := shared.Admin.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2, err
	})
}

func TestNamespaceDeletionFinishes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 3*time.Minute)
	ns := shared.Namespace(t)
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(ctx, testDeployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Admin.BatchV1().Jobs(ns).Create(ctx, testJob("batch", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "pods scheduled", func(ctx context.Context) (bool, error) {
		phases, err := podPhases(ctx, shared.Admin, ns, nil)
		return phases[corev1.PodRunning]+phases[corev1.PodSucceeded] >= 3, err
	})

	began := time.Now()
	if err := shared.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "namespace gone", func(ctx context.Context) (bool, error) {
		_, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	took := time.Since(began)
	t.Logf("namespace with running and completed pods deleted in %s", took.Round(time.Millisecond))
	if took > 2*time.Minute {
		t.Fatalf("namespace deletion took %s, want at most 2m", took)
	}
}

// grantRole creates a Role with rules in ns and binds it to the ServiceAccount
// ns/sa.
func grantRole(t *testing.T, ctx context.Context, ns, sa string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: rules}
	if _, err := shared.Admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	if _, err := shared.Admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func serviceAccountClient(t *testing.T, ctx context.Context, ns, sa string) kubernetes.Interface {
	t.Helper()
	cfg, err := shared.ServiceAccountConfig(ctx, ns, sa)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestServiceAccountHasOnlyItsRole(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, time.Minute)
	ns := shared.Namespace(t)
	other := shared.Namespace(t)
	grantRole(t, ctx, ns, "reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}})
	cs := serviceAccountClient(t, ctx, ns, "reader")

	// RBAC reaches the authorizer through its informers: wait for the grant.
	eventually(t, ctx, "granted list of pods", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})

	denied := map[string]func() error{
		"create configmap in own namespace": func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		},
		"delete pods in own namespace": func() error {
			return cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		"list pods in another namespace": func() error {
			_, err := cs.CoreV1().Pods(other).List(ctx, metav1.ListOptions{})
			return err
		},
		"delete own namespace": func() error {
			return cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		},
	}
	for what, call := range denied {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: err = %v, want Forbidden", what, err)
		}
	}
	if _, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace after a denied delete: %v", err)
	}
}

func TestAuditedRequestsAreTheTestsOwn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, time.Minute)
	ns := shared.Namespace(t)
	grantRole(t, ctx, ns, "writer", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}})
	cs := serviceAccountClient(t, ctx, ns, "writer")

	// The first create may meet an authorizer that has not seen the binding.
	eventually(t, ctx, "create configmap", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	reqs, err := shared.AuditedRequests(ctx, ServiceAccountUser(ns, "writer"))
	if err != nil {
		t.Fatal(err)
	}
	// Drop creates denied while RBAC caught up; what remains is exact.
	reqs = slices.DeleteFunc(reqs, func(r Request) bool { return r.Verb == "create" && r.Code == 403 })
	want := []Request{
		{Verb: "create", Resource: "configmaps", Namespace: ns, Name: "probe", Code: 201},
		{Verb: "delete", Resource: "configmaps", Namespace: ns, Name: "probe", Code: 200},
	}
	if !slices.Equal(reqs, want) {
		t.Fatalf("audited requests:\n%s\nwant:\n%s", requestLines(reqs), requestLines(want))
	}

	// Another user's requests are not attributed to this one.
	admin, err := shared.AuditedRequests(ctx, AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(admin, func(r Request) bool {
		return r.Verb == "create" && r.Resource == "rolebindings" && r.Namespace == ns && r.Name == "writer" && r.Code == 201
	}) {
		t.Fatalf("admin's requests lack the rolebinding it created:\n%s", requestLines(admin))
	}
}

func TestStartWithoutBinariesNamesMakeTarget(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, err := Start(t.Context(), Options{Tier: FullTier})
	if err == nil {
		t.Fatal("Start succeeded without binaries")
	}
	for _, want := range []string{"kube-apiserver", "etcd", "kwok", "make control-plane"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func requestLines(reqs []Request) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}
