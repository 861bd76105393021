package cluster

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/internal/owner"
)

// rbacRule is a rule of a ClusterRole.
type rbacRule struct {
	APIGroups []string `json:"apiGroups"`
	Resources []string `json:"resources"`
	Verbs     []string `json:"verbs"`
}

// shippedRules are the rules of nsman's ClusterRole in deploy/base and in
// the chart's template of them (what its define holds), by file.
func shippedRules(t *testing.T) map[string][]rbacRule {
	t.Helper()
	out := map[string][]rbacRule{}
	base := "../../deploy/base/rbac.yaml"
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	for doc := range bytes.SplitSeq(data, []byte("\n---\n")) {
		var role struct {
			Kind  string     `json:"kind"`
			Rules []rbacRule `json:"rules"`
		}
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if role.Kind == "ClusterRole" {
			out[base] = role.Rules
		}
	}
	chart := "../../deploy/helm/nsman/templates/_clusterrole-rules.tpl"
	if data, err = os.ReadFile(chart); err != nil {
		t.Fatal(err)
	}
	_, body, _ := bytes.Cut(data, []byte(`{{- define "nsman.clusterRoleRules" -}}`))
	body, _, _ = bytes.Cut(body, []byte("{{- end }}"))
	var rules []rbacRule
	if err := yaml.Unmarshal(body, &rules); err != nil {
		t.Fatalf("%s: %v", chart, err)
	}
	out[chart] = rules
	for path, rules := range out {
		if len(rules) == 0 {
			t.Fatalf("%s: no rules read", path)
		}
	}
	return out
}

// The shipped ClusterRole, deploy/base's and the chart's, lets nsman read
// each owner kind (get and list, cluster-wide: reading is harmless) and
// nothing more of it; Permissions, which nsman doctor reviews, holds what
// internal/owner says reading them needs.
func TestShippedRBACReadsEachOwnerKind(t *testing.T) {
	for path, rules := range shippedRules(t) {
		for _, k := range owner.Kinds() {
			var verbs []string
			for _, r := range rules {
				if slices.Contains(r.APIGroups, k.Resource.Group) && slices.Contains(r.Resources, k.Resource.Resource) {
					verbs = append(verbs, r.Verbs...)
				}
			}
			slices.Sort(verbs)
			if !slices.Equal(verbs, []string{"get", "list"}) {
				t.Errorf("%s grants %q on %s, want get and list", path, verbs, k.Ref())
			}
		}
	}
	for _, p := range owner.Permissions() {
		if !slices.ContainsFunc(Permissions, func(q Permission) bool {
			return q.Verb == p.Verb && q.Group == p.Group && q.Resource == p.Resource && q.Subresource == "" && q.Why == p.Why
		}) {
			t.Errorf("Permissions lacks %s %s.%s (%s)", p.Verb, p.Resource, p.Group, p.Why)
		}
	}
}
