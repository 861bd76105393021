package doctor

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

func TestAPIServerVersion(t *testing.T) {
	for v, want := range map[string]Status{
		"v1.29.9":          Failed,
		"v1.30.0":          OK,
		"v1.36.3+k3s1":     OK,
		"v1.30.0-eks-1234": OK,
		"something":        Warning,
	} {
		kube := fake.NewClientset()
		kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: v}
		if c := apiServer(kube); c.Status != want || !strings.Contains(c.Message, "1.30") {
			t.Errorf("%s: %s (%s), want %s, naming 1.30", v, c.Status, c.Message, want)
		}
	}
}

func schemaOf(t *testing.T, y string) schemaNode {
	t.Helper()
	var n schemaNode
	if err := yaml.Unmarshal([]byte(y), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCompareSchemas(t *testing.T) {
	want := schemaOf(t, `
properties:
  spec:
    properties:
      a: {type: string}
      rule:
        properties:
          x: {type: string}
          y: {type: string}
      list:
        items:
          properties:
            kind: {type: string, enum: [One, Two, Three]}
            extra: {type: string}
      open:
        properties:
          z: {type: string}
`)
	have := schemaOf(t, `
properties:
  spec:
    properties:
      a: {type: string}
      list:
        items:
          properties:
            kind: {type: string, enum: [One]}
      open:
        x-kubernetes-preserve-unknown-fields: true
      newer: {type: string}
`)
	gap, unknown := compareSchemas(want, have)
	// rule is missing whole: named once, not x and y; open keeps z.
	if want := []string{"spec.list[].extra", "spec.rule"}; !slices.Equal(gap.pruned, want) {
		t.Errorf("pruned %q, want %q", gap.pruned, want)
	}
	if want := []string{"spec.list[].kind=Two", "spec.list[].kind=Three"}; !slices.Equal(gap.refused, want) {
		t.Errorf("refused %q, want %q", gap.refused, want)
	}
	if want := []string{"spec.newer"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown %q, want %q", unknown, want)
	}
	if gap, unknown := compareSchemas(want, want); !gap.empty() || len(unknown) > 0 {
		t.Errorf("a schema against itself: %+v, %q", gap, unknown)
	}
}
