package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/test/nsmantest"
)

// wantPatchable checks the configuredPatchable of the policy named name
// among objs.
func wantPatchable(t *testing.T, objs []*unstructured.Unstructured, name, want string) {
	t.Helper()
	vars := typedPolicy(t, findNamed(t, objs, policyKind, name)).Spec.Variables
	if len(vars) <= nsmantest.PatchableIndex || vars[nsmantest.PatchableIndex].Name != nsmantest.PatchableVariable {
		t.Fatalf("policy %s: variables %+v, want %s at %d", name, vars, nsmantest.PatchableVariable, nsmantest.PatchableIndex)
	}
	if got := vars[nsmantest.PatchableIndex].Expression; got != want {
		t.Errorf("policy %s: %s is %s, want %s", name, nsmantest.PatchableVariable, got, want)
	}
}

// TestHelmChartSleepPatchable: sleep.patchable renders the ClusterRole and
// binding <fullname>-patchable, list and patch of each kind and nothing
// else, and the admission policy's configuredPatchable; [] renders neither
// (the map is {}); an entry without group, resource or fields, a kind
// listed twice, a group of no custom resource (core, Kubernetes' own,
// nsman's: patches name none), or a field no sleep's patch may change
// (status, apiVersion, kind, metadata but labels and annotations, nsman's
// annotations, a field below a spec field, which the policy does not
// compare) is refused, saying which.
func TestHelmChartSleepPatchable(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		r := render(t)
		for _, o := range r.objs {
			if strings.HasSuffix(o.GetName(), "-patchable") {
				t.Errorf("%s rendered with sleep.patchable []", identity(o))
			}
		}
		wantPatchable(t, r.objs, "nsman", "{}")
	})

	t.Run("kinds of its own", func(t *testing.T) {
		r := render(t, "--set", "fullnameOverride=sweeper", "--set-json",
			`sleep.patchable=[{"group":"source.toolkit.fluxcd.io","resource":"ocirepositories","fields":["data","metadata.labels","metadata.annotations.example.com/paused"]},{"group":"example.com","resource":"widgets","fields":["spec.paused","spec"]}]`)
		checkPatchableRBAC(t, r.cj, r.objs, []string{"list ocirepositories.source.toolkit.fluxcd.io", "list widgets.example.com", "patch ocirepositories.source.toolkit.fluxcd.io", "patch widgets.example.com"})
		findNamed(t, r.objs, "ClusterRole", "sweeper-patchable")
		wantPatchable(t, r.objs, "sweeper", "{'source.toolkit.fluxcd.io/ocirepositories': ['data', 'metadata.labels', 'metadata.annotations.example.com/paused'], 'example.com/widgets': ['spec.paused', 'spec']}")
	})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, value, want string
	}{
		{"no group", `[{"resource":"helmreleases","fields":["spec.suspend"]}]`, `sleep.patchable[0]: no group (a custom resource's, e.g. helm.toolkit.fluxcd.io)`},
		{"a group that is none", `[{"group":"Helm Toolkit","resource":"helmreleases","fields":["spec.suspend"]}]`, `sleep.patchable[0]: group "Helm Toolkit" is no custom resource's API group`},
		{"the core group", `[{"group":"","resource":"configmaps","fields":["data"]}]`, `sleep.patchable[0]: group "" is no custom resource's API group`},
		{"a group of Kubernetes' without a dot", `[{"group":"apps","resource":"deployments","fields":["spec.paused"]}]`, `sleep.patchable[0]: group "apps" is no custom resource's API group`},
		{"a group of Kubernetes'", `[{"group":"networking.k8s.io","resource":"ingresses","fields":["spec.rules"]}]`, `sleep.patchable[0]: group "networking.k8s.io" is Kubernetes' or nsman's own`},
		{"nsman's group", `[{"group":"k8s.consol.de","resource":"namespacemanagers","fields":["spec.deactivated"]}]`, `sleep.patchable[0]: group "k8s.consol.de" is Kubernetes' or nsman's own`},
		{"nsman's annotation", `[{"group":"a.io","resource":"xs","fields":["metadata.annotations.nsman.k8s.consol.de/hold-until"]}]`, `"metadata.annotations.nsman.k8s.consol.de/hold-until" may not be patched`},
		{"no resource", `[{"group":"helm.toolkit.fluxcd.io","fields":["spec.suspend"]}]`, "sleep.patchable[0]: no resource"},
		{"a kind, not a resource", `[{"group":"helm.toolkit.fluxcd.io","resource":"HelmRelease","fields":["spec.suspend"]}]`, `sleep.patchable[0]: resource "HelmRelease" is no resource name`},
		{"no fields", `[{"group":"helm.toolkit.fluxcd.io","resource":"helmreleases"}]`, "sleep.patchable[0]: no fields (what a sleep's patches may change of helm.toolkit.fluxcd.io/helmreleases)"},
		{"empty fields", `[{"group":"helm.toolkit.fluxcd.io","resource":"helmreleases","fields":[]}]`, "sleep.patchable[0]: no fields"},
		{"twice", `[{"group":"a.io","resource":"xs","fields":["spec.a"]},{"group":"a.io","resource":"xs","fields":["spec.b"]}]`, "sleep.patchable[1]: a.io/xs is listed twice"},
		{"status", `[{"group":"a.io","resource":"xs","fields":["status"]}]`, `sleep.patchable[0].fields: "status" may not be patched`},
		{"apiVersion", `[{"group":"a.io","resource":"xs","fields":["apiVersion"]}]`, `"apiVersion" may not be patched`},
		{"kind", `[{"group":"a.io","resource":"xs","fields":["kind"]}]`, `"kind" may not be patched`},
		{"metadata", `[{"group":"a.io","resource":"xs","fields":["metadata"]}]`, `"metadata" may not be patched`},
		{"metadata.name", `[{"group":"a.io","resource":"xs","fields":["metadata.name"]}]`, `"metadata.name" may not be patched`},
		{"metadata.finalizers", `[{"group":"a.io","resource":"xs","fields":["metadata.finalizers"]}]`, `"metadata.finalizers" may not be patched`},
		{"metadata.annotations whole", `[{"group":"a.io","resource":"xs","fields":["metadata.annotations"]}]`, `"metadata.annotations" may not be patched`},
		{"below a spec field", `[{"group":"a.io","resource":"xs","fields":["spec.values.image"]}]`, `"spec.values.image" may not be patched`},
		{"a quote in an annotation", `[{"group":"a.io","resource":"xs","fields":["metadata.annotations.a'b"]}]`, `"metadata.annotations.a'b" may not be patched: name spec.FIELD, metadata.labels, metadata.annotations.KEY (not nsman's) or a top-level field but apiVersion, kind, metadata and status`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set-json", "sleep.patchable="+tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template with sleep.patchable=%s: %v, want it refused: %q", tc.value, err, tc.want)
			}
		})
	}
}
