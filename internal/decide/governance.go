package decide

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Governors maps each namespace single-target managers (of any shard) may
// act on to those managers: rules leave it alone if one of them shields
// it. It is filled while the managers are listed, then read.
type Governors struct {
	trusted     []string
	byNamespace map[string][]governor
}

// NewGovernors returns the governors of a sweep that trusts the namespaces
// trusted.
func NewGovernors(trusted []string) *Governors {
	return &Governors{trusted: trusted, byNamespace: map[string][]governor{}}
}

// Note records a single-target manager as a governor of the
// namespace it aims at, if the manager may act on it: it lives there, or in
// a trusted namespace. A manager the guards refuse shields nothing from
// rules, nor does one deactivated or invalid. It is parsed here, keeping
// two strings and a bool: keeping the manager for later held every
// manager's object for the whole sweep (peak RSS 87 MiB at 10,000, not 52).
// A deactivated one is told by spec.deactivated alone: it is parsed once a
// sweep, by EvaluateManager.
func (g *Governors) Note(obj *unstructured.Unstructured) {
	target := aimsAt(obj)
	if target == obj.GetNamespace() || slices.Contains(g.trusted, obj.GetNamespace()) {
		shields := false
		if spec, _ := obj.Object["spec"].(map[string]any); spec["deactivated"] != true {
			m, problems := parseManager(obj)
			shields = !m.Deactivated && len(problems) == 0
		}
		g.byNamespace[target] = append(g.byNamespace[target], governor{name: obj.GetNamespace() + "/" + obj.GetName(), shields: shields})
	}
}

// governor is a single-target manager that may act on a namespace; it
// shields it from rules while it is active and valid.
type governor struct {
	name    string
	shields bool
}

// Shielding returns the name of the first governor of namespace that
// shields it from rules, or "" when none does.
func (g *Governors) Shielding(namespace string) string {
	for _, gov := range g.byNamespace[namespace] {
		if gov.shields {
			return gov.name
		}
	}
	return ""
}

// aimsAt is the namespace a single-target manager aims at, valid or not:
// spec.namespace when it is a non-empty string, else its name.
func aimsAt(obj *unstructured.Unstructured) string {
	spec, _ := obj.Object["spec"].(map[string]any)
	if ns, _ := spec["namespace"].(string); ns != "" {
		return ns
	}
	return obj.GetName()
}
