package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// features names what a field or an enum value of nsman's CRD is for,
// where its path alone does not say it to a user.
var features = map[string]string{
	"spec.enforce":                                 "rules that tenants cannot opt out of",
	"spec.namespaceSelector":                       "rules",
	"spec.namePatterns":                            "rules",
	"spec.policies[].final":                        "stages",
	"spec.policies[].windows":                      "windows to act in",
	"spec.policies[].condition.params.minChecks":   "minChecks",
	"spec.policies[].condition.params.at":          "EXPIRES at a time",
	"spec.policies[].condition.params.idleSeconds": "the IDLE condition",
	"spec.policies[].condition.type=PODS_FAILED":   "the PODS_FAILED condition",
	"spec.policies[].condition.type=EXPIRES":       "the EXPIRES condition",
	"spec.policies[].condition.type=IDLE":          "the IDLE condition",
	"spec.policies[].condition.type=OWNER_GONE":    "the OWNER_GONE condition",
}

// schemaNode is a node of an OpenAPI v3 schema as decoded from JSON or YAML.
type schemaNode = map[string]any

// fields maps the path of every node below node that a structural schema
// declares, to that node: properties by name ("spec.policies"), array
// items as "[]" ("spec.policies[]"), map values as "{}"
// ("spec.podLabels{}"). Below a node that keeps unknown fields (or a map of
// any values) nothing is pruned: its path maps to nil and is not walked.
func fields(node schemaNode, path string, out map[string]schemaNode) {
	if keep, _ := node["x-kubernetes-preserve-unknown-fields"].(bool); keep {
		out[path] = nil
		return
	}
	props, _ := node["properties"].(map[string]any)
	for name, child := range props {
		p := name
		if path != "" {
			p = path + "." + name
		}
		walk(child, p, out)
	}
	if items, ok := node["items"]; ok {
		walk(items, path+"[]", out)
	}
	switch values := node["additionalProperties"].(type) {
	case bool:
		if values {
			out[path+"{}"] = nil
		}
	case map[string]any:
		walk(values, path+"{}", out)
	}
}

func walk(child any, path string, out map[string]schemaNode) {
	c, _ := child.(map[string]any)
	out[path] = c
	if c != nil {
		fields(c, path, out)
	}
}

// schemaGap is what an installed schema lacks of the one this nsman
// carries: the fields the API server would prune (the topmost of each
// missing branch) and the enum values it would refuse, as "path=value".
type schemaGap struct {
	pruned, refused []string
}

func (g schemaGap) empty() bool { return len(g.pruned) == 0 && len(g.refused) == 0 }

// lines describes the gap a line each, with the feature each missing part
// serves where features knows it.
func (g schemaGap) lines() []string {
	var out []string
	for _, p := range g.pruned {
		out = append(out, withFeature(p, p+": pruned"))
	}
	for _, r := range g.refused {
		path, value, _ := strings.Cut(r, "=")
		out = append(out, withFeature(r, fmt.Sprintf("%s: %s refused", path, value)))
	}
	return out
}

func withFeature(key, line string) string {
	if f, ok := features[key]; ok {
		return line + " (" + f + ")"
	}
	return line
}

// compareSchemas returns what have lacks of want, and the fields have
// declares that want does not (a CRD newer than this nsman).
func compareSchemas(want, have schemaNode) (gap schemaGap, unknown []string) {
	w, h := map[string]schemaNode{}, map[string]schemaNode{}
	fields(want, "", w)
	fields(have, "", h)
	for _, p := range slices.Sorted(maps.Keys(w)) {
		hn, ok := h[p]
		switch {
		case !ok && !below(p, h):
			if !slices.ContainsFunc(gap.pruned, func(q string) bool { return within(p, q) }) {
				gap.pruned = append(gap.pruned, p)
			}
		case ok && hn != nil && w[p] != nil:
			if hEnum, ok := hn["enum"].([]any); ok {
				for _, v := range enum(w[p]) {
					if !slices.ContainsFunc(hEnum, func(x any) bool { return fmt.Sprint(x) == v }) {
						gap.refused = append(gap.refused, p+"="+v)
					}
				}
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(h)) {
		if _, ok := w[p]; !ok && !below(p, w) && !slices.ContainsFunc(unknown, func(q string) bool { return within(p, q) }) {
			unknown = append(unknown, p)
		}
	}
	return gap, unknown
}

// below reports whether path lies under a node of declared that keeps
// unknown fields (mapped to nil).
func below(path string, declared map[string]schemaNode) bool {
	for p, n := range declared {
		if n == nil && within(path, p) && path != p {
			return true
		}
	}
	return false
}

// within reports whether path is parent or lies below it ("" is the
// root, above everything).
func within(path, parent string) bool {
	return parent == "" || path == parent || strings.HasPrefix(path, parent+".") || strings.HasPrefix(path, parent+"[]") || strings.HasPrefix(path, parent+"{}")
}

func enum(node schemaNode) []string {
	values, _ := node["enum"].([]any)
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = fmt.Sprint(v)
	}
	return out
}
