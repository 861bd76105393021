package nsmantest

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The shared control plane's fence is the base's with flux-suspend's
// configuredPatchable, set where the component sets it.
func TestFenceWithFluxSuspend(t *testing.T) {
	want := "{'helm.toolkit.fluxcd.io/helmreleases': ['spec.suspend'], 'kustomize.toolkit.fluxcd.io/kustomizations': ['spec.suspend']}"
	if got, err := FluxSuspendPatchable(); err != nil || got != want {
		t.Fatalf("FluxSuspendPatchable() = %q, %v; want %q", got, err, want)
	}
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "deploy", "base", "admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := withFluxSuspend(objs); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
		v := vars[PatchableIndex].(map[string]any)
		switch o.GetName() {
		case ServiceAccountName:
			if v["name"] != PatchableVariable || v["expression"] != want {
				t.Errorf("policy %s: variable %d %v, want %s: %s", o.GetName(), PatchableIndex, v, PatchableVariable, want)
			}
		default:
			if v["name"] == PatchableVariable {
				t.Errorf("policy %s changed too", o.GetName())
			}
		}
	}
	// Moved, it is not set blindly.
	if err := SetPatchable(objs, ServiceAccountName+"-records", want); err == nil {
		t.Error("SetPatchable of the records policy, whose variable 1 is another: no error")
	}
}
