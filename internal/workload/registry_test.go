package workload

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/internal/docgen"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// The registry has a home for every kind the parser knows, in its order,
// and the parser knows every kind registered.
func TestRegistryIsPolicysKnownKinds(t *testing.T) {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
		if k.Way == nil || k.Resource.Resource == "" || k.Why == "" {
			t.Errorf("kind %s registered without its way, resource or why: %+v", k.Name, k)
		}
	}
	if !slices.Equal(names, policy.KnownKinds) {
		t.Errorf("registered kinds %q, policy.KnownKinds %q: want the same, in the same order", names, policy.KnownKinds)
	}
}

// What a way says is awake (probe's reading, from the spec as decoded:
// Awake, then Above the policy's SleepTo) is what its sleep to that would
// change (execute's patch), for each way, state and SleepTo.
func TestAwakeIsWhatSleepWouldChange(t *testing.T) {
	states := []struct {
		spec        map[string]any
		annotations map[string]string
	}{
		{spec: map[string]any{}},
		{spec: map[string]any{"replicas": int64(0)}},
		{spec: map[string]any{"replicas": int64(3)}},
		{spec: map[string]any{"replicas": int64(0)}, annotations: map[string]string{status.ReplicasAnnotation: "3"}},
		{spec: map[string]any{"suspend": true}},
		{spec: map[string]any{"suspend": false}},
		{spec: map[string]any{"suspend": true}, annotations: map[string]string{status.SuspendAnnotation: "false"}},
		{spec: map[string]any{}, annotations: map[string]string{status.KedaPausedReplicas: "0"}},
		{spec: map[string]any{}, annotations: map[string]string{status.KedaPausedReplicas: "2"}},
		{spec: map[string]any{}, annotations: map[string]string{status.KedaPausedReplicas: "0", status.PausedReplicasAnnotation: ""}},
		{spec: map[string]any{"replicas": int64(1)}},
		{spec: map[string]any{"replicas": int64(1)}, annotations: map[string]string{status.ReplicasAnnotation: "3", status.ReplicasAsleepAnnotation: "1"}},
		{spec: map[string]any{"replicas": int64(2)}, annotations: map[string]string{status.ReplicasAnnotation: "3", status.ReplicasAsleepAnnotation: "1"}},
		{spec: map[string]any{"replicas": int64(0)}, annotations: map[string]string{status.ReplicasAnnotation: "3", status.ReplicasAsleepAnnotation: "1"}},
		{spec: map[string]any{"replicas": int64(2)}, annotations: map[string]string{status.ReplicasAsleepAnnotation: "2"}},
		{spec: map[string]any{"replicas": int64(2)}, annotations: map[string]string{status.ReplicasAnnotation: "3", status.ReplicasAsleepAnnotation: "two"}},
		{spec: map[string]any{"type": "LoadBalancer"}},
		{spec: map[string]any{"type": "ClusterIP"}, annotations: map[string]string{status.LoadBalancerAnnotation: `{"type":"LoadBalancer"}`}},
		{spec: map[string]any{"type": "NodePort"}},
	}
	for _, way := range ways() {
		for _, s := range states {
			w := object("W", s.spec, s.annotations)
			raw, err := json.Marshal(s.spec)
			if err != nil {
				t.Fatal(err)
			}
			var spec Spec
			if err := json.Unmarshal(raw, &spec); err != nil {
				t.Fatal(err)
			}
			for _, to := range []policy.SleepTo{{}, {Replicas: 1}, {Replicas: 2}, {LoadBalancers: true}} {
				patch, _ := way.Sleep("W/w", w, to)
				if awake := way.Awake(&spec, s.annotations) && way.Above(&spec, to); awake != (patch != nil) {
					t.Errorf("%s to %+v of spec %s, annotations %v: awake %v, but its sleep patches %v", way.Verb(), to, raw, s.annotations, awake, patch)
				}
			}
		}
	}
}

// A way's record and the state it keeps in an annotation are among the
// annotations a workload is read with, and its record is its wake's.
func TestWaysReadTheirRecords(t *testing.T) {
	for _, way := range ways() {
		if !slices.Contains(way.Annotations(), way.Record()) {
			t.Errorf("%s: its record %s is not among the annotations it reads %q", way.Verb(), way.Record(), way.Annotations())
		}
		for _, a := range way.Annotations() {
			if !slices.Contains(Annotations(), a) {
				t.Errorf("%s reads %s, which Annotations leaves out", way.Verb(), a)
			}
		}
		if len(way.AwakeField()) == 0 {
			t.Errorf("%s names no field that keeps a workload awake", way.Verb())
		}
	}
}

// rbacRule is a rule of a ClusterRole.
type rbacRule struct {
	APIGroups []string `json:"apiGroups"`
	Resources []string `json:"resources"`
	Verbs     []string `json:"verbs"`
}

// clusterRoleRules are the rules of the ClusterRole in the manifests of
// path: deploy/base's, or the chart's template of them (what its define
// holds).
func clusterRoleRules(t *testing.T, path string) []rbacRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".tpl") {
		_, body, _ := bytes.Cut(data, []byte(`{{- define "nsman.clusterRoleRules" -}}`))
		body, _, _ = bytes.Cut(body, []byte("{{- end }}"))
		var rules []rbacRule
		if err := yaml.Unmarshal(body, &rules); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return rules
	}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var role struct {
			Kind  string     `json:"kind"`
			Rules []rbacRule `json:"rules"`
		}
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if role.Kind == "ClusterRole" {
			return role.Rules
		}
	}
	t.Fatalf("%s has no ClusterRole", path)
	return nil
}

// The shipped ClusterRole, deploy/base's and the chart's, grants every
// permission a registered kind declares it needs.
func TestShippedRBACGrantsEveryKind(t *testing.T) {
	for _, path := range []string{"../../deploy/base/rbac.yaml", "../../deploy/helm/nsman/templates/_clusterrole-rules.tpl"} {
		rules := clusterRoleRules(t, path)
		if len(rules) == 0 {
			t.Fatalf("%s: no rules read", path)
		}
		for _, p := range slices.Concat(Permissions(), ParkPermissions()) {
			if !slices.ContainsFunc(rules, func(r rbacRule) bool {
				return slices.Contains(r.APIGroups, p.Group) && slices.Contains(r.Resources, p.Resource) && slices.Contains(r.Verbs, p.Verb)
			}) {
				t.Errorf("%s does not grant %s %s.%s (%s), which a registered kind needs", path, p.Verb, p.Resource, p.Group, p.Why)
			}
		}
	}
}

var update = flag.Bool("update", false, "rewrite the table of kinds in docs/sleep.md")

// The markers around the table of kinds in docs/sleep.md.
const (
	sleepDocPath = "../../docs/sleep.md"
	tableStart   = "<!-- kinds: generated by `make docs` from internal/workload; do not edit -->\n"
	tableEnd     = "<!-- end of kinds -->"
)

// docs/sleep.md's table of kinds is the registered ways' (Table); make
// docs rewrites it.
func TestSleepDocUpToDate(t *testing.T) {
	docgen.Section(t, sleepDocPath, tableStart, tableEnd, "table of kinds", Table(), *update)
}
