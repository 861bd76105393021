package crdref

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
)

// field returns the CRD's field at path.
func field(t *testing.T, path string) Schema {
	t.Helper()
	fields, err := Fields()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(fields, func(f Field) bool { return f.Path == path })
	if i < 0 {
		t.Fatalf("the CRD has no %s", path)
	}
	return fields[i].Schema
}

// The CRD's enum of condition types is the registry's, in its order, and
// the type's description names each.
func TestCRDConditionTypesAreRegistered(t *testing.T) {
	s := field(t, "spec.policies[].condition.type")
	var enum []string
	for _, raw := range s.Enum {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("condition type enum: %v", err)
		}
		enum = append(enum, v)
	}
	var registered []string
	for _, ct := range policy.ConditionTypes() {
		registered = append(registered, ct.Type())
		if !strings.Contains(s.Description, ct.Type()) {
			t.Errorf("the description of condition.type does not name %s", ct.Type())
		}
	}
	if !slices.Equal(enum, registered) {
		t.Errorf("the CRD's condition types are %v, the registered ones %v", enum, registered)
	}
}

// The CRD declares the parameters the registered conditions read, each
// of the kind and bounds they read it with, its description naming the
// conditions that read it, and a rule for each one a condition requires.
func TestCRDConditionParamsAreRegistered(t *testing.T) {
	s := field(t, ParamsPath)
	var keys []string
	for _, prm := range policy.AllParams() {
		keys = append(keys, prm.Key)
		ps, ok := s.Properties[prm.Key]
		if !ok {
			t.Errorf("the CRD has no %s.%s, which %v read", ParamsPath, prm.Key, policy.ReadBy(prm.Key))
			continue
		}
		if got, want := shape(ps), shapeOf(prm.Kind); got != want {
			t.Errorf("%s: the CRD declares a %s, the conditions read a %s", prm.Key, got, want)
		}
		if seconds := strings.HasSuffix(prm.Key, "Seconds"); seconds != (prm.Kind == policy.ParamSeconds) {
			t.Errorf("%s: a parameter is named …Seconds if and only if it counts seconds", prm.Key)
		}
		if prm.Kind == policy.ParamSeconds || prm.Kind == policy.ParamCount {
			if got, want := wholeBounds(ps), fmt.Sprintf("%d to %d", prm.Min, policy.MaxSeconds); got != want {
				t.Errorf("%s: the CRD bounds it %s, the conditions %s", prm.Key, got, want)
			}
		}
		prefix := strings.Join(policy.ReadBy(prm.Key), ", ")
		if prm.Required != "" {
			prefix += " (required)"
		}
		if !strings.HasPrefix(ps.Description, prefix+":") {
			t.Errorf("%s: its description %q does not begin with the conditions that read it, %q", prm.Key, ps.Description, prefix+":")
		}
	}
	if declared := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(declared, slices.Sorted(slices.Values(keys))) {
		t.Errorf("the CRD declares the parameters %v, the conditions read %v", declared, keys)
	}
	var rules, want []string
	for _, v := range field(t, "spec.policies[].condition").Validations {
		if strings.HasPrefix(v.Rule, "self.type != ") {
			rules = append(rules, v.Rule)
		}
	}
	for _, ct := range policy.ConditionTypes() {
		for _, prm := range ct.Params() {
			if prm.Required != "" {
				want = append(want, fmt.Sprintf("self.type != '%s' || (has(self.params) && has(self.params.%s))", ct.Type(), prm.Key))
			}
		}
	}
	if !slices.Equal(rules, want) {
		t.Errorf("the CRD's rules of required parameters are %q, the conditions require %q", rules, want)
	}
}

// enumOf is s's enum of strings.
func enumOf(s Schema) []string {
	var out []string
	for _, raw := range s.Enum {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// wholeBounds are a whole number's bounds in the CRD.
func wholeBounds(s Schema) string {
	if s.Minimum == nil || s.Maximum == nil {
		return "not both ways"
	}
	return fmt.Sprintf("%.0f to %.0f", *s.Minimum, *s.Maximum)
}

// shape is what a CRD field declares, as a parameter's kind needs it.
func shape(s Schema) string {
	values, _ := mapValues(s)
	switch {
	case s.Type == "integer":
		return "whole number"
	case s.Type == "object" && values != nil && values.Type == "string":
		return "label map"
	case s.Type == "string" && s.Format == "date-time":
		return "time"
	case s.Type == "object" && s.Properties["query"].MaxLength != nil && *s.Properties["query"].MaxLength == traffic.MaxQuery &&
		slices.Equal(enumOf(s.Properties["preset"]), traffic.Names()):
		return "traffic source"
	}
	return "field of no parameter's kind"
}

// shapeOf is the shape a parameter of kind k needs in the CRD.
func shapeOf(k policy.ParamKind) string {
	switch k {
	case policy.ParamSeconds, policy.ParamCount:
		return "whole number"
	case policy.ParamLabels:
		return "label map"
	case policy.ParamTime:
		return "time"
	case policy.ParamTraffic:
		return "traffic source"
	}
	return "parameter of no kind"
}

// The CRD declares every field of the checks a sweep keeps in a manager's
// status (policy.CheckState): the API server prunes a field it does not
// declare, and OWNER_GONE would lose when the owner went (and write its
// check again) at every sweep.
func TestCRDKeepsEveryCheckField(t *testing.T) {
	fields, err := Fields()
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[policy.CheckState]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		path := "status.checks.*." + name
		if !slices.ContainsFunc(fields, func(f Field) bool { return f.Path == path }) {
			t.Errorf("the CRD has no %s, which policy.CheckState.%s is kept as", path, typ.Field(i).Name)
		}
	}
}
