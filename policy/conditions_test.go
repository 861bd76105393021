package policy

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// conditionManager is a manager of one DELETE policy whose condition is of
// type typ with params.
func conditionManager(typ string, params map[string]any) *unstructured.Unstructured {
	return manager(policies(map[string]any{
		"name":      "the policy",
		"condition": map[string]any{"type": typ, "params": params},
		"action":    map[string]any{"type": ActionDelete},
	}))
}

// requiredParams are valid values of t's required parameters.
func requiredParams(t ConditionType) map[string]any {
	params := map[string]any{}
	for _, prm := range t.Params() {
		if prm.Required != "" {
			params[prm.Key] = int64(60)
		}
	}
	return params
}

const paramsPath = "spec.policies[0].condition.params."

// Every condition type is registered once under its own name.
func TestConditionTypesRegistered(t *testing.T) {
	seen := map[string]bool{}
	for _, ct := range ConditionTypes() {
		if seen[ct.Type()] {
			t.Errorf("%s is registered twice", ct.Type())
		}
		seen[ct.Type()] = true
		if got, ok := LookupCondition(ct.Type()); !ok || got != ct {
			t.Errorf("LookupCondition(%q) = %v, %v; want the registered type", ct.Type(), got, ok)
		}
	}
	if _, ok := LookupCondition("NEVER"); ok {
		t.Error("LookupCondition found a type nobody registered")
	}
}

// A condition reads exactly the parameters it declares: a bad value of
// one of them is refused, of another one ignored (ParseStrict refuses
// both, as the CRD checks every parameter it declares).
func TestConditionReadsItsParams(t *testing.T) {
	for _, ct := range ConditionTypes() {
		for _, prm := range AllParams() {
			params := requiredParams(ct)
			params[prm.Key] = true // no parameter takes a boolean
			obj := conditionManager(ct.Type(), params)
			_, errs := Parse(obj)
			reads := slices.ContainsFunc(ct.Params(), func(p Param) bool { return p.Key == prm.Key })
			want := []fieldErr(nil)
			if reads {
				want = []fieldErr{invalid(paramsPath + prm.Key)}
			}
			if got := fieldErrs(errs); !slices.Equal(got, want) {
				t.Errorf("%s with %s: true: Parse says %v, want %v", ct.Type(), prm.Key, got, want)
			}
			_, errs = ParseStrict(obj)
			if got := fieldErrs(errs); !slices.Equal(got, []fieldErr{invalid(paramsPath + prm.Key)}) {
				t.Errorf("%s with %s: true: ParseStrict says %v, want it refused", ct.Type(), prm.Key, got)
			}
		}
	}
}

// A parameter left out is what its Default says, or refused when it is
// Required.
func TestConditionParamDefaults(t *testing.T) {
	for _, ct := range ConditionTypes() {
		for _, prm := range ct.Params() {
			params := requiredParams(ct)
			delete(params, prm.Key)
			without, errs := Parse(conditionManager(ct.Type(), params))
			if prm.Required != "" {
				if got := fieldErrs(errs); !slices.Equal(got, []fieldErr{required(paramsPath + prm.Key)}) {
					t.Errorf("%s without %s: %v, want it required", ct.Type(), prm.Key, got)
				}
				continue
			}
			if len(errs) > 0 {
				t.Fatalf("%s without %s: %v", ct.Type(), prm.Key, errs)
			}
			if prm.Kind != ParamSeconds && prm.Kind != ParamCount {
				continue
			}
			explicit := maps.Clone(params)
			explicit[prm.Key] = prm.Default
			with, errs := Parse(conditionManager(ct.Type(), explicit))
			if len(errs) > 0 || !reflect.DeepEqual(with.Policies[0].Condition, without.Policies[0].Condition) {
				t.Errorf("%s: %s left out reads %+v, set to its Default %d reads %+v (%v)", ct.Type(), prm.Key,
					without.Policies[0].Condition, prm.Default, with.Policies[0].Condition, errs)
			}
		}
	}
}

// A condition asks for the evidence it declares, and only for it: pods
// (NeedPods), the activity (NeedActivity), and the touched annotation
// changes what it decides.
func TestConditionAsksForItsEvidence(t *testing.T) {
	now := at(400 * 24 * time.Hour)
	for _, ct := range ConditionTypes() {
		params := requiredParams(ct)
		if slices.Contains(ct.Params(), initialDelayParam) {
			params[initialDelayParam.Key] = int64(0)
		}
		m, errs := Parse(conditionManager(ct.Type(), params))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", ct.Type(), errs)
		}
		e := ct.Evidence()
		if m.Policies[0].Condition.Evidence() != e {
			t.Errorf("%s: the parsed condition's evidence differs from its type's", ct.Type())
		}
		out := Evaluate(m, Input{Now: now, TargetCreated: created})
		if (out.Verdict == NeedPods) != (e.Pods != NoPods) || (out.Verdict == NeedActivity) != (e.Activity && e.Pods == NoPods) {
			t.Errorf("%s, evidence %+v: %s, asked of nothing but its age", ct.Type(), e, out.Verdict)
		}
		answered := Input{Now: now, TargetCreated: created, Pods: map[int]PodsCheck{0: {}}, Activity: &Activity{}}
		untouched := Evaluate(m, answered)
		answered.TargetTouched = now.Add(-time.Second).Format(time.RFC3339)
		if touched := Evaluate(m, answered); (touched.Verdict != untouched.Verdict) != e.Touched {
			t.Errorf("%s, evidence %+v: %s untouched, %s touched a second ago", ct.Type(), e, untouched.Verdict, touched.Verdict)
		}
	}
}

// A manager reads what the conditions of its policies need.
func TestManagerNeeds(t *testing.T) {
	m := mgr(idle("idle", time.Hour), Policy{Name: "pods", Condition: Condition{Type: ConditionPodsFailed}})
	if !m.ReadsActivity() || !m.ReadsTouched() || !m.ChecksPods(PodsFailed) || m.ChecksPods(PodsNotSucceeded) {
		t.Errorf("IDLE and PODS_FAILED: activity %v, touched %v, failed pods %v, pods not succeeded %v",
			m.ReadsActivity(), m.ReadsTouched(), m.ChecksPods(PodsFailed), m.ChecksPods(PodsNotSucceeded))
	}
	if m := mgr(Policy{Name: "ttl", Condition: Condition{Type: ConditionTTL}}); m.ReadsActivity() || m.ReadsTouched() || m.ChecksPods(PodsNotSucceeded) {
		t.Error("a TTL manager reads activity, touch or pods")
	}
}

// ParseStrict reports the parameters a condition does not read in the
// registry's order, the same at every run (nsman validate prints them so).
func TestParseStrictOrdersUnreadParams(t *testing.T) {
	obj := conditionManager(ConditionTTL, map[string]any{"idleSeconds": int64(0), "minChecks": int64(0), "periodSeconds": int64(0)})
	want := []string{paramsPath + "periodSeconds", paramsPath + "minChecks", paramsPath + "idleSeconds"}
	for range 20 {
		_, errs := ParseStrict(obj)
		var got []string
		for _, e := range errs {
			got = append(got, e.Field)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ParseStrict reports %v, want %v", got, want)
		}
	}
}
