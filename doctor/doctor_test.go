package doctor

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/deploy"
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
      tags:
        items: {type: string, enum: [a, b]}
      checks:
        additionalProperties:
          properties:
            passed: {type: integer}
            at: {type: string}
      labels:
        additionalProperties: {type: string}
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
      tags:
        items: {type: string, enum: [a]}
      checks:
        additionalProperties:
          properties:
            at: {type: string}
      labels:
        additionalProperties: true
`)
	gap, unknown := compareSchemas(want, have)
	// rule is missing whole: named once, not x and y; open keeps z.
	// A map's values are walked ({}), a map of anything prunes nothing.
	if want := []string{"spec.checks{}.passed", "spec.list[].extra", "spec.rule"}; !slices.Equal(gap.pruned, want) {
		t.Errorf("pruned %q, want %q", gap.pruned, want)
	}
	// An enum on array items is compared too.
	if want := []string{"spec.list[].kind=Two", "spec.list[].kind=Three", "spec.tags[]=b"}; !slices.Equal(gap.refused, want) {
		t.Errorf("refused %q, want %q", gap.refused, want)
	}
	if want := []string{"spec.newer"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown %q, want %q", unknown, want)
	}
	if gap, unknown := compareSchemas(want, want); !gap.empty() || len(unknown) > 0 {
		t.Errorf("a schema against itself: %+v, %q", gap, unknown)
	}
}

// TestCompareSchemasKeepingEverything: below a root that keeps unknown
// fields nothing is pruned.
func TestCompareSchemasKeepingEverything(t *testing.T) {
	want := schemaOf(t, "properties:\n  spec:\n    properties:\n      a: {type: string}\n")
	have := schemaOf(t, "x-kubernetes-preserve-unknown-fields: true\n")
	if gap, _ := compareSchemas(want, have); !gap.empty() {
		t.Errorf("a schema that keeps everything: %+v, want no gap", gap)
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/nsman/nsman:0.1.0":         "0.1.0",
		"registry.local:5000/nsman:v1.2.3":  "v1.2.3",
		"registry.local:5000/nsman":         "",
		"ghcr.io/nsman/nsman@sha256:abc123": "",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestEmbeddedCRD: the CRD this binary judges against is nsman's, serving
// the managers' version with a schema and a status subresource.
func TestEmbeddedCRD(t *testing.T) {
	var crd map[string]any
	if err := yaml.Unmarshal(deploy.CRD, &crd); err != nil {
		t.Fatal(err)
	}
	schema, status := servedVersion(crd)
	if schema == nil || !status {
		t.Fatalf("deploy.CRD: schema %v, status subresource %v", schema != nil, status)
	}
	f := map[string]schemaNode{}
	fields(schema, "", f)
	for _, p := range []string{"spec.policies[].final", "spec.enforce", "spec.policies[].condition.params.minChecks", "status"} {
		if _, ok := f[p]; !ok {
			t.Errorf("deploy.CRD declares no %s", p)
		}
	}
}

// The chart version doctor's fix names is a release's tag without its v,
// and none for a build that is no release.
func TestChartVersion(t *testing.T) {
	for _, tt := range []struct {
		version, want string
		ok            bool
	}{
		{"v1.2.3", "1.2.3", true},
		{"v1.3.0-rc.1", "1.3.0-rc.1", true},
		{"v1.2.3-4-g8ad10db", "", false},
		{"v0.0.0-20261128124410-8ad10db0ce61", "", false},
		{"v1.2.4-0.20261128124410-8ad10db0ce61", "", false},
		{"v0.0.0-20261128124410-8ad10db0ce61+dirty", "", false},
		{"dev", "", false},
		{"dev-8ad10db0ce61", "", false},
		{"1.2.3", "", false},
	} {
		if got, ok := chartVersion(tt.version); got != tt.want || ok != tt.ok {
			t.Errorf("chartVersion(%q) = %q, %t; want %q, %t", tt.version, got, ok, tt.want, tt.ok)
		}
	}
}
