package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// patchableAllowed is what the fence says it allows of a kind
// configuredPatchable names with spec.suspend alone.
const patchableAllowed = "nsman may change only spec.suspend and the annotations " + status.PatchedAnnotation + ", " + reconcileAllowed + " of "

// fluxKind is the owner kind of Flux's resource (helmreleases or
// kustomizations).
func fluxKind(t *testing.T, group, resource string) owner.Kind {
	t.Helper()
	k, ok := owner.KindOf(schema.GroupResource{Group: group, Resource: resource})
	if !ok {
		t.Fatalf("no owner kind %s.%s", resource, group)
	}
	return k
}

// grantFluxPatch lets the ServiceAccount namespace/name patch HelmReleases
// and Kustomizations for the time of t, as deploy/components/flux-suspend
// lets nsman's (which the shared control plane does not bind: its RBAC is
// deploy/base's). In force once a dry-run patch that changes nothing of
// probe goes through.
func grantFluxPatch(ctx context.Context, t *testing.T, client dynamic.Interface, namespace, name string, probe *unstructured.Unstructured, res schema.GroupVersionResource) {
	t.Helper()
	role := "nsman-test-flux-patch-" + namespace + "-" + name
	bindClusterRole(ctx, t, role, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name},
		rbacv1.PolicyRule{APIGroups: []string{"helm.toolkit.fluxcd.io"}, Resources: []string{"helmreleases"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"patch"}},
	)
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = patchAs(ctx, client, res, probe.GetNamespace(), probe.GetName(), map[string]any{}, false, metav1.PatchOptions{DryRun: dryRun})
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%s/%s may not patch %s: %v (%v)", namespace, name, res.Resource, last, err)
	}
}

// fluxObject creates, as admin, the object of owner kind k named
// namespace/name, deleted after t.
func fluxObject(ctx context.Context, t *testing.T, k owner.Kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := env.Dynamic.Resource(k.Resource).Namespace(namespace).Create(ctx, nsmantest.OwnerObject(k, namespace, name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", k.Name, namespace, name, err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(k.Resource).Namespace(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return obj
}

// suspendPatchRecord is the record a sleep's patch {spec: {suspend: true}}
// writes: the patch and its inverse, as JSON.
var suspendPatchRecord = `{"patch":{"spec":{"suspend":true}},"inverse":{"spec":{"suspend":null}}}`

// TestAdmissionPolicyFencesSleepPatches: under the fence as the shared
// control plane installs it, with deploy/components/flux-suspend's
// configuredPatchable (and a grant to patch, as the component's), nsman's
// ServiceAccount may suspend a HelmRelease and a Kustomization with the
// record of the patch, switch Flux off, and take it all back, each write
// conditional on the resourceVersion as nsman sends it; it may change
// nothing else of them (their values, chart, source, labels, another
// annotation), nor suspend one in a protected namespace. Under the base's
// default, {}, even spec.suspend is refused; under a map that lists
// labels and an annotation (metadata.annotations.KEY), those and no other
// go through.
func TestAdmissionPolicyFencesSleepPatches(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
	helm, kust := fluxKind(t, "helm.toolkit.fluxcd.io", "helmreleases"), fluxKind(t, "kustomize.toolkit.fluxcd.io", "kustomizations")
	tenant, own := shared.Namespace(t), nsmantest.ServiceAccountNamespace
	fluxObject(ctx, t, kust, tenant, "app")
	release := fluxObject(ctx, t, helm, tenant, "app")
	ownName := "fence-" + tenant
	fluxObject(ctx, t, helm, own, ownName)
	saDyn := saDynamic(t, e.Kubeconfig)
	grantFluxPatch(ctx, t, saDyn, nsmantest.ServiceAccountNamespace, nsmantest.ServiceAccountName, release, helm.Resource)
	policy := nsmantest.AdmissionPolicy

	t.Run("allowed", func(t *testing.T) {
		for _, k := range []owner.Kind{helm, kust} {
			for _, step := range []struct {
				name  string
				patch map[string]any
			}{
				{"suspended, with the record", annotated(map[string]any{status.PatchedAnnotation: suspendPatchRecord}, map[string]any{"suspend": true})},
				{"Flux switched off", annotated(map[string]any{fluxReconcile: "disabled", reconcileRecord: ""}, nil)},
				{"Flux switched back", annotated(map[string]any{fluxReconcile: nil, reconcileRecord: nil}, nil)},
				{"resumed, the record removed", annotated(map[string]any{status.PatchedAnnotation: nil}, map[string]any{"suspend": nil})},
				{"suspended again", annotated(map[string]any{status.PatchedAnnotation: suspendPatchRecord}, map[string]any{"suspend": true})},
				{"its record removed alone", annotated(map[string]any{status.PatchedAnnotation: nil}, nil)},
			} {
				if err := patchAs(ctx, saDyn, k.Resource, tenant, "app", step.patch, true, metav1.PatchOptions{}); err != nil {
					t.Errorf("%s %s: %v", k.Name, step.name, err)
				}
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		of := patchableAllowed + "HelmRelease " + tenant + "/app, not "
		for _, tc := range []struct {
			name  string
			res   schema.GroupVersionResource
			ns    string
			obj   string
			patch map[string]any
			want  string
		}{
			{"a HelmRelease's values", helm.Resource, tenant, "app", map[string]any{"spec": map[string]any{"values": map[string]any{"image": "registry.invalid/miner:1"}}}, of + "spec.values"},
			{"a HelmRelease's values with its suspension", helm.Resource, tenant, "app",
				annotated(map[string]any{status.PatchedAnnotation: suspendPatchRecord}, map[string]any{"suspend": true, "values": map[string]any{"replicaCount": 9}}), of + "spec.values"},
			{"a HelmRelease's chart", helm.Resource, tenant, "app", map[string]any{"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{"chart": "miner"}}}}, of + "spec.chart"},
			{"another annotation of a HelmRelease", helm.Resource, tenant, "app", annotated(map[string]any{"example.com/owner": "nsman"}, nil), of + "annotation example.com/owner"},
			{"the replicas record on a HelmRelease", helm.Resource, tenant, "app", annotated(map[string]any{"nsman.k8s.consol.de/replicas-before-scale-down": "1"}, nil), of + "annotation nsman.k8s.consol.de/replicas-before-scale-down"},
			{"a HelmRelease's labels", helm.Resource, tenant, "app", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "x"}}}, of + "metadata.labels"},
			{"a Kustomization's path", kust.Resource, tenant, "app", map[string]any{"spec": map[string]any{"path": "./miner"}},
				patchableAllowed + "Kustomization " + tenant + "/app, not spec.path"},
			{"a HelmRelease suspended in nsman's own namespace", helm.Resource, own, ownName, annotated(map[string]any{status.PatchedAnnotation: suspendPatchRecord}, map[string]any{"suspend": true}),
				"may not change HelmRelease " + own + "/" + ownName + ": namespace " + own + " is protected"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				deniedBy(t, patchAs(ctx, saDyn, tc.res, tc.ns, tc.obj, tc.patch, false, metav1.PatchOptions{DryRun: dryRun}), policy, tc.want)
			})
		}
		got, err := e.Dynamic.Resource(helm.Resource).Namespace(tenant).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Suspended still ("allowed" left it so), and nothing else.
		chart, _, _ := unstructured.NestedString(got.Object, "spec", "chart", "spec", "chart")
		if spec, _, _ := unstructured.NestedMap(got.Object, "spec"); spec["values"] != nil || chart != "app" || len(got.GetLabels()) > 0 || len(got.GetAnnotations()) > 0 {
			t.Errorf("HelmRelease %s/app changed: spec %v, labels %v, annotations %v", tenant, spec, got.GetLabels(), got.GetAnnotations())
		}
	})

	t.Run("the base's default", func(t *testing.T) {
		p, _ := basePolicy(t, "nsman")
		vars := typedPolicy(t, p).Spec.Variables
		if len(vars) <= nsmantest.PatchableIndex || vars[nsmantest.PatchableIndex].Name != nsmantest.PatchableVariable || vars[nsmantest.PatchableIndex].Expression != "{}" {
			t.Fatalf("deploy/base's variables %+v: want %s = {} at %d (components patch it by its index)", vars, nsmantest.PatchableVariable, nsmantest.PatchableIndex)
		}
		untouched := fluxObject(ctx, t, helm, tenant, "untouched")
		saDyn, policy := otherFence(ctx, t, e, "nsman-fence-default-test", "", untouched, helm.Resource)
		err := refusedAtLast(ctx, saDyn, helm.Resource, untouched, annotated(map[string]any{status.PatchedAnnotation: suspendPatchRecord}, map[string]any{"suspend": true}), policy)
		deniedBy(t, err, policy, "nsman may change only spec.replicas and the annotations ")
		deniedBy(t, err, policy, "of HelmRelease "+tenant+"/untouched, not spec.suspend, annotation "+status.PatchedAnnotation)
	})

	// Labels and annotations a platform lets patches change: the
	// annotation's key after metadata.annotations., nothing else.
	t.Run("labels and an annotation", func(t *testing.T) {
		labelled := fluxObject(ctx, t, helm, tenant, "labelled")
		saDyn, policy := otherFence(ctx, t, e, "nsman-fence-labels-test",
			"{'helm.toolkit.fluxcd.io/helmreleases': ['metadata.labels', 'metadata.annotations.example.com/paused']}", labelled, helm.Resource)
		of := "nsman may change only metadata.labels and the annotations example.com/paused, " + status.PatchedAnnotation + ", " + reconcileAllowed + " of HelmRelease " + tenant + "/labelled, not "
		deniedBy(t, refusedAtLast(ctx, saDyn, helm.Resource, labelled, map[string]any{"spec": map[string]any{"suspend": true}}, policy), policy, of+"spec.suspend")
		deniedBy(t, refusedAtLast(ctx, saDyn, helm.Resource, labelled, annotated(map[string]any{"example.com/pause": "true"}, nil), policy), policy, of+"annotation example.com/pause")
		patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"sleeping": "true"}, "annotations": map[string]any{"example.com/paused": "true", status.PatchedAnnotation: "{}"}}}
		if err := patchAs(ctx, saDyn, helm.Resource, tenant, "labelled", patch, true, metav1.PatchOptions{}); err != nil {
			t.Errorf("a label and the annotation: %v", err)
		}
	})
}

// otherFence installs deploy/base's fence, its configuredPatchable set to
// patchable unless "", named name, around a ServiceAccount of its own
// granted to patch HelmReleases and Kustomizations (probe one of them),
// and returns a client of that ServiceAccount and the policy's name in its
// refusals. The shared fence holds nsman's ServiceAccount alone, so this
// one is the only one that holds the other.
func otherFence(ctx context.Context, t *testing.T, e *nsmantest.Env, name, patchable string, probe *unstructured.Unstructured, res schema.GroupVersionResource) (dynamic.Interface, string) {
	t.Helper()
	home := shared.Namespace(t)
	if _, err := shared.Admin.CoreV1().ServiceAccounts(home).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, b := basePolicy(t, "nsman")
	p, b = p.DeepCopy(), b.DeepCopy()
	p.SetName(name)
	b.SetName(name)
	if err := unstructured.SetNestedField(b.Object, name, "spec", "policyName"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(p.Object, []any{map[string]any{"name": "nsman-service-account", "expression": usernameCondition(home, name)}}, "spec", "matchConditions"); err != nil {
		t.Fatal(err)
	}
	if patchable != "" {
		if err := nsmantest.SetPatchable([]*unstructured.Unstructured{p}, name, patchable); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []*unstructured.Unstructured{p, b} {
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		e.Apply(t, data)
	}
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(bindingResource).Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = e.Dynamic.Resource(policyResource).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	cfg, err := shared.ServiceAccountConfig(ctx, home, name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := cluster.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	saDyn := saDynamic(t, kubeconfig)
	grantFluxPatch(ctx, t, saDyn, home, name, probe, res)
	return saDyn, fmt.Sprintf("ValidatingAdmissionPolicy '%s'", name)
}

// refusedAtLast sends client's patch of obj as a dry run until policy,
// which the API server loads a moment after it is created, refuses it
// (a dry run changes nothing while it does not yet), and returns the last
// answer: nil when policy lets the patch through.
func refusedAtLast(ctx context.Context, client dynamic.Interface, res schema.GroupVersionResource, obj *unstructured.Unstructured, patch map[string]any, policy string) error {
	var err error
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err = patchAs(ctx, client, res, obj.GetNamespace(), obj.GetName(), patch, false, metav1.PatchOptions{DryRun: dryRun})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), policy), nil
	})
	return err
}
