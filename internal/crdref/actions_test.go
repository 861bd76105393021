package crdref

import (
	"maps"
	"slices"
	"testing"

	"github.com/nsman/nsman/policy"
)

// TestCRDHasTheRegisteredActions holds the CRD's action types and their
// parameters to policy's registry of actions: an action registered is one
// the API server accepts, and a parameter it reads one the CRD declares.
func TestCRDHasTheRegisteredActions(t *testing.T) {
	fields, err := Fields()
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]Schema{}
	for _, f := range fields {
		schemas[f.Path] = f.Schema
	}
	typ, ok := schemas["spec.policies[].action.type"]
	if !ok {
		t.Fatal("the CRD has no spec.policies[].action.type")
	}
	var enum []string
	for _, v := range typ.Enum {
		enum = append(enum, string(v))
	}
	var want []string
	for _, a := range policy.ActionTypes() {
		want = append(want, `"`+a+`"`)
	}
	if !slices.Equal(enum, want) {
		t.Errorf("the CRD's action types are %v, policy registers %v", enum, want)
	}
	params := slices.Sorted(maps.Keys(schemas["spec.policies[].action.params"].Properties))
	if want := slices.Sorted(slices.Values(policy.ActionParams())); !slices.Equal(params, want) {
		t.Errorf("the CRD's action params are %v, the actions read %v", params, want)
	}
}
