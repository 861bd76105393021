package nsmantest

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// PatchableVariable is the admission policy's variable that says what a
// sleep's params.patches may change, by kind; PatchableIndex its place,
// which components patch.
const (
	PatchableVariable = "configuredPatchable"
	PatchableIndex    = 1
)

// FluxSuspendPatchable is the configuredPatchable that
// deploy/components/flux-suspend sets: the value of its patch's replace of
// /spec/variables/1/expression.
func FluxSuspendPatchable() (string, error) {
	path := filepath.Join(RepoRoot(), "deploy", "components", "flux-suspend", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var k struct {
		Patches []struct {
			Patch string `json:"patch"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	want := fmt.Sprintf("/spec/variables/%d/expression", PatchableIndex)
	for _, p := range k.Patches {
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}
		if err := yaml.Unmarshal([]byte(p.Patch), &ops); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		for _, op := range ops {
			if v, ok := op.Value.(string); ok && op.Op == "replace" && op.Path == want {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no replace of %s", path, want)
}

// SetPatchable sets the configuredPatchable of the policy among objs named
// name to expression, as a component does; an error when that variable is
// not where components patch it.
func SetPatchable(objs []*unstructured.Unstructured, name, expression string) error {
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" || o.GetName() != name {
			continue
		}
		vars, _, err := unstructured.NestedSlice(o.Object, "spec", "variables")
		if err != nil {
			return err
		}
		var v any
		if len(vars) > PatchableIndex {
			v = vars[PatchableIndex]
		}
		m, ok := v.(map[string]any)
		if !ok || m["name"] != PatchableVariable {
			return fmt.Errorf("policy %s: variable %d is %v, want %s", name, PatchableIndex, v, PatchableVariable)
		}
		m["expression"] = expression
		return unstructured.SetNestedSlice(o.Object, vars, "spec", "variables")
	}
	return fmt.Errorf("no policy %s", name)
}

// withFluxSuspend sets the fence's configuredPatchable among objs to
// deploy/components/flux-suspend's.
func withFluxSuspend(objs []*unstructured.Unstructured) error {
	expr, err := FluxSuspendPatchable()
	if err != nil {
		return err
	}
	return SetPatchable(objs, ServiceAccountName, expr)
}
