// Package crdref renders the reference of nsman's NamespaceManager CRD,
// every field of spec and status with its type, default, bounds and
// meaning, from the CRD the binary embeds (deploy.CRD) and the defaults
// nsman applies (policy). docs/reference.md holds the text; `make docs`
// writes it there, and a test fails when it is stale.
package crdref

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/deploy"
	"github.com/nsman/nsman/policy"
)

// Schema is the part of a CRD's OpenAPI schema the reference reads.
type Schema struct {
	Type          string            `json:"type"`
	Format        string            `json:"format"`
	Description   string            `json:"description"`
	Enum          []json.RawMessage `json:"enum"`
	Pattern       string            `json:"pattern"`
	Minimum       *float64          `json:"minimum"`
	Maximum       *float64          `json:"maximum"`
	MinLength     *int64            `json:"minLength"`
	MaxLength     *int64            `json:"maxLength"`
	MinItems      *int64            `json:"minItems"`
	MaxItems      *int64            `json:"maxItems"`
	MaxProperties *int64            `json:"maxProperties"`
	Required      []string          `json:"required"`
	Properties    map[string]Schema `json:"properties"`
	Items         *Schema           `json:"items"`
	// AdditionalProperties is a schema or a bool; only a schema is read.
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Validations          []struct {
		Rule    string `json:"rule"`
		Message string `json:"message"`
	} `json:"x-kubernetes-validations"`
}

// Field is one field of the CRD, by its path (spec.policies[].name; a map's
// values are spec.x.*).
type Field struct {
	Path     string
	Schema   Schema
	Required bool
}

// Fields returns every field under spec and status of the embedded CRD's
// only version, parents before their children, siblings by name.
func Fields() ([]Field, error) {
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema Schema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(deploy.CRD, &crd); err != nil {
		return nil, fmt.Errorf("read the CRD: %w", err)
	}
	if len(crd.Spec.Versions) != 1 {
		return nil, fmt.Errorf("the CRD has %d versions, the reference renders one", len(crd.Spec.Versions))
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	var out []Field
	for _, name := range []string{"spec", "status"} {
		s, ok := root.Properties[name]
		if !ok {
			return nil, fmt.Errorf("the CRD has no %s", name)
		}
		if err := walk(name, s, slices.Contains(root.Required, name), &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// walk appends the field at path and every field beneath it.
func walk(path string, s Schema, required bool, out *[]Field) error {
	*out = append(*out, Field{Path: path, Schema: s, Required: required})
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := walk(path+"."+name, s.Properties[name], slices.Contains(s.Required, name), out); err != nil {
			return err
		}
	}
	if s.Items != nil {
		// The items of an array of objects are its fields, one level down.
		for _, name := range sortedKeys(s.Items.Properties) {
			if err := walk(path+"[]."+name, s.Items.Properties[name], slices.Contains(s.Items.Required, name), out); err != nil {
				return err
			}
		}
	}
	if values, err := mapValues(s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	} else if values != nil && len(values.Properties) > 0 {
		for _, name := range sortedKeys(values.Properties) {
			if err := walk(path+".*."+name, values.Properties[name], slices.Contains(values.Required, name), out); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mapValues is the schema of a map's values, nil when s is no map.
func mapValues(s Schema) (*Schema, error) {
	if len(s.AdditionalProperties) == 0 || s.AdditionalProperties[0] != '{' {
		return nil, nil
	}
	var v Schema
	if err := json.Unmarshal(s.AdditionalProperties, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Defaults are what nsman takes for a field left out, by path: the CRD
// itself sets none (the API server would then write them into every
// manager, also the original operator's), nsman applies them as it reads.
// A condition's parameters' are those its registration declares.
var Defaults = withConditionParams(map[string]string{
	"spec.deactivated":                               "false",
	"spec.enforce":                                   "false",
	"spec.namespace":                                 "the manager's name",
	"spec.policies[].final":                          "true (a SLEEP policy: false)",
	"spec.policies[].windows[].days":                 "every day",
	"spec.policies[].windows[].dates":                "every date",
	"spec.policies[].windows[].timeZone":             "UTC",
	"spec.policies[].action.params.selectors":        "SCALE_DOWN: every Deployment and StatefulSet; SLEEP: every workload of the kinds it handles",
	"spec.policies[].action.params.replicas":         "0",
	"spec.policies[].action.params.loadBalancers":    "false",
	"spec.policies[].action.params.patches":          "no patch",
	"spec.policies[].action.params.patches[].labels": "every object of the kind",
})

// ParamsPath is the path of a condition's parameters in the CRD.
const ParamsPath = "spec.policies[].condition.params"

// withConditionParams adds to defaults those of every condition
// parameter that has one (policy.AllParams).
func withConditionParams(defaults map[string]string) map[string]string {
	for _, prm := range policy.AllParams() {
		if def := prm.DefaultText(); def != "" {
			defaults[ParamsPath+"."+prm.Key] = def
		}
	}
	return defaults
}

// Reference renders the fields of spec, then of status, as Markdown tables.
func Reference() (string, error) {
	fields, err := Fields()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, f := range fields {
		if f.Path == "spec" || f.Path == "status" {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "## `%s`\n\n%s\n\n", f.Path, f.Schema.Description)
			b.WriteString("| field | type | default | bounds | meaning |\n| --- | --- | --- | --- | --- |\n")
			continue
		}
		name := "`" + f.Path + "`"
		if f.Required {
			name += " (required)"
		}
		def := Defaults[f.Path]
		if def != "" && !strings.Contains(def, " ") {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, typeOf(f.Schema), def, cell(bounds(f.Schema)), cell(meaning(f.Schema)))
	}
	return b.String(), nil
}

// typeOf names s's type as kubectl explain does: an array of its items, a
// map of its values.
func typeOf(s Schema) string {
	t := s.Type
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	switch {
	case s.Type == "array" && s.Items != nil:
		return "[]" + typeOf(*s.Items)
	case s.Type == "object" && len(s.AdditionalProperties) > 0:
		if v, err := mapValues(s); err == nil && v != nil {
			return "map[string]" + typeOf(*v)
		}
	}
	return t
}

// bounds are what the API server refuses beyond: lengths, counts, ranges,
// the values allowed, a pattern; of an array's items and a map's values too.
func bounds(s Schema) string {
	var parts []string
	add := func(bound string, v *int64, one, many string) {
		if v != nil {
			unit := many
			if *v == 1 {
				unit = one
			}
			parts = append(parts, fmt.Sprintf("%s %d %s", bound, *v, unit))
		}
	}
	add("at least", s.MinItems, "item", "items")
	add("at most", s.MaxItems, "item", "items")
	add("at most", s.MaxProperties, "entry", "entries")
	add("at least", s.MinLength, "character", "characters")
	add("at most", s.MaxLength, "character", "characters")
	if s.Minimum != nil {
		parts = append(parts, "≥ "+strconv.FormatFloat(*s.Minimum, 'f', -1, 64))
	}
	if s.Maximum != nil {
		parts = append(parts, "≤ "+strconv.FormatFloat(*s.Maximum, 'f', -1, 64))
	}
	if len(s.Enum) > 0 {
		values := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			var str string
			if json.Unmarshal(v, &str) != nil {
				str = string(v)
			}
			values[i] = "`" + str + "`"
		}
		parts = append(parts, "one of "+strings.Join(values, ", "))
	}
	if s.Pattern != "" {
		parts = append(parts, "matches `"+s.Pattern+"`")
	}
	if s.Items != nil && len(s.Items.Properties) == 0 {
		if inner := bounds(*s.Items); inner != "" {
			parts = append(parts, "each: "+inner)
		}
	}
	if v, err := mapValues(s); err == nil && v != nil && len(v.Properties) == 0 {
		if inner := bounds(*v); inner != "" {
			parts = append(parts, "each value: "+inner)
		}
	}
	return strings.Join(parts, "; ")
}

// meaning is s's description, then the messages of its validation rules
// (two rules may say the same).
func meaning(s Schema) string {
	var messages []string
	for _, v := range s.Validations {
		if m := strings.TrimSuffix(v.Message, "."); !slices.Contains(messages, m) {
			messages = append(messages, m)
		}
	}
	if len(messages) == 0 {
		return s.Description
	}
	return strings.TrimSpace(s.Description + " Validation: " + strings.Join(messages, "; ") + ".")
}

// cell makes text one Markdown table cell.
func cell(text string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(text)
}
