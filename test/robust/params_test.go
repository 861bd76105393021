package robust

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/test/nsmantest"
)

// The SLEEP of a mix with every parameter of issue 47's: a rule (only a
// rule or a trusted manager may patch) keeping one replica of Deployment
// "web" of 3, parking Service "edge" of type LoadBalancer, and suspending
// Flux HelmRelease "release" (params.replicas, loadBalancers, patches).

// paramsAsleepLine and paramsAwakeLine are paramsLine of what makeParams
// made, put to sleep with its records, and awake as made.
const (
	paramsAsleepLine = `web 1 "3" "1", edge ClusterIP recorded, release true recorded`
	paramsAwakeLine  = `web 3 - -, edge LoadBalancer -, release false -`
	// paramsPatchedOnce is paramsPatches of a namespace whose objects
	// were each patched once.
	paramsPatchedOnce = "Deployment 1, Service 1, HelmRelease 1"
)

// sleepParamsPolicy is sleepPolicy(from, to) with every parameter.
func sleepParamsPolicy(from, to time.Duration) map[string]any {
	p := sleepPolicy(from, to)
	p["action"] = map[string]any{"type": "SLEEP", "params": map[string]any{
		"replicas": int64(1), "loadBalancers": true,
		"patches": []any{map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "labels": map[string]any{"app": "web"},
			"patch": map[string]any{"spec": map[string]any{"suspend": true}}}},
	}}
	return p
}

// seedParams adds to the mix a rule with every parameter over a namespace
// of its own holding what makeParams makes; nsman may list and patch
// HelmReleases, as deploy/components/flux-suspend grants (the shared
// fence lets it change their spec.suspend).
func (m *mix) seedParams(t *testing.T, e *nsmantest.Env) {
	t.Helper()
	ctx := t.Context()
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	grantHelmReleases(t)
	ensureRuleHome(t)
	name := "rule-params-" + m.run
	ns := shared.Namespace(t)
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"nsman.test/rule":%q}}}`, name), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := makeParams(ctx, e, ns); err != nil {
		t.Fatal(err)
	}
	rule := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
		"metadata": map[string]any{"namespace": ruleHome, "name": name, "labels": map[string]any{"nsman.test/crash": m.run}},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"nsman.test/rule": name}},
			"policies":          []any{sleepParamsPolicy(-time.Hour, 2*time.Hour)},
		},
	}}
	created, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ruleHome).Create(ctx, rule, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.params = append(m.params, ns)
	m.rules[name] = created.GetUID()
}

// grantHelmReleases binds nsman's ServiceAccount, once, to list and patch
// HelmReleases.
func grantHelmReleases(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	const name = "nsman-robust-helmreleases"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{nsmantest.HelmReleaseResource.Group}, Resources: []string{nsmantest.HelmReleaseResource.Resource}, Verbs: []string{"list", "patch"}}}}
	if _, err := shared.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: nsmantest.ServiceAccountName, Namespace: nsmantest.ServiceAccountNamespace}}}
	if _, err := shared.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// makeParams creates, as admin, in ns: Deployment "web" of 3 replicas,
// Service "edge" of type LoadBalancer, HelmRelease "release" labelled
// app=web, not suspended.
func makeParams(ctx context.Context, e *nsmantest.Env, ns string) error {
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(ctx, nsmantest.Deployment("web", 3), metav1.CreateOptions{}); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := shared.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	release := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": nsmantest.HelmReleaseResource.GroupVersion().String(), "kind": "HelmRelease",
		"metadata": map[string]any{"name": "release", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"interval": "5m", "suspend": false, "chart": map[string]any{"spec": map[string]any{
			"chart": "app", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}},
	}}
	_, err := e.Dynamic.Resource(nsmantest.HelmReleaseResource).Namespace(ns).Create(ctx, release, metav1.CreateOptions{})
	return err
}

// paramsLine says what makeParams made in ns is at now, with the records
// nsman keeps ("-": none): web's replicas, its count and its replicas
// asleep; edge's type, and whether its record is there; release's suspend,
// and whether its record is there.
func paramsLine(t *testing.T, e *nsmantest.Env, ns string) string {
	t.Helper()
	ctx := t.Context()
	d, err := shared.Admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := shared.Admin.CoreV1().Services(ns).Get(ctx, "edge", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hr, err := e.Dynamic.Resource(nsmantest.HelmReleaseResource).Namespace(ns).Get(ctx, "release", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	value := func(annotations map[string]string, key string) string {
		if v, ok := annotations[key]; ok {
			return fmt.Sprintf("%q", v)
		}
		return "-"
	}
	recorded := func(annotations map[string]string, key string) string {
		if _, ok := annotations[key]; ok {
			return "recorded"
		}
		return "-"
	}
	suspend, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
	return fmt.Sprintf("web %d %s %s, edge %s %s, release %t %s",
		*d.Spec.Replicas, value(d.Annotations, status.ReplicasAnnotation), value(d.Annotations, status.ReplicasAsleepAnnotation),
		svc.Spec.Type, recorded(svc.Annotations, status.LoadBalancerAnnotation),
		suspend, recorded(hr.GetAnnotations(), status.PatchedAnnotation))
}

// checkParams checks that the mix's rule with every parameter converged:
// its record on each namespace settled (asleep, or awake), and what it
// made there as want says.
func (m mix) checkParams(t *testing.T, e *nsmantest.Env, asleep bool, want string) {
	t.Helper()
	uid := m.rules["rule-params-"+m.run]
	for _, ns := range m.params {
		st, err := pairProgress(t, ns, uid)
		if err != nil || !settled(st) || (st.Asleep != nil) != asleep || st.Asleep != nil && st.Asleep.Partial {
			t.Errorf("rule with every parameter on %s not converged (asleep %t): record %+v asleep %+v (%v)", ns, asleep, st, st.Asleep, err)
		}
		if got := paramsLine(t, e, ns); got != want {
			t.Errorf("rule with every parameter: %s: %s, want %s", ns, got, want)
		}
	}
}

// paramsPatches says how many times each object of makeParams in ns was
// patched.
func (c tally) paramsPatches(ns string) string {
	return fmt.Sprintf("Deployment %d, Service %d, HelmRelease %d", c.scales[ns], c.services[ns], c.releases[ns])
}

// isParamsRule reports whether name is a mix's rule with every parameter.
func isParamsRule(name string) bool { return strings.HasPrefix(name, "rule-params-") }
