package policy

import (
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ConditionType is one type of condition, in its own file
// (condition_<type>.go): the parameters it reads and how, the evidence it
// needs, and how it judges a policy. The parser, the evaluator, the pods
// and activity reads and the CRD's reference ask it, not its name; its
// unexported methods keep every implementation in this package.
type ConditionType interface {
	// Type is the condition's type as a manifest spells it.
	Type() string
	// Params are the parameters it reads under condition.params.
	Params() []Param
	// Evidence is what it needs read of the target beyond its namespace.
	Evidence() Evidence
	// parse reads params (at pp) into a Condition of this type, refusing
	// also what nsman's CRD refuses when strict (see ParseStrict).
	parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList)
	// judge judges j's policy by its condition: j.state with why, and
	// j.checks with its progress.
	judge(j judging) (Verdict, PolicyState, map[string]CheckState)
}

// judging is a policy being judged by its condition: what the judge reads,
// and the state and checks it writes and returns. It goes through the
// interface by value, so that Evaluate's states stay on the stack.
type judging struct {
	state      PolicyState
	checks     map[string]CheckState
	generation int64
	// i is the policy's index, p the policy.
	i  int
	p  Policy
	in Input
}

// conditionTypes are the registered condition types, in the order the
// CRD's enum and the parser's messages list them.
var conditionTypes = []ConditionType{ttlCondition{}, podsSucceedCondition{}, podsFailedCondition{}, expiresCondition{}, idleCondition{}, ownerGoneCondition{}}

// ConditionTypes returns the registered condition types, in order.
func ConditionTypes() []ConditionType { return slices.Clone(conditionTypes) }

// LookupCondition returns the condition type spelled typ, false for none.
func LookupCondition(typ string) (ConditionType, bool) {
	i := slices.IndexFunc(conditionTypes, func(t ConditionType) bool { return t.Type() == typ })
	if i < 0 {
		return nil, false
	}
	return conditionTypes[i], true
}

// conditionNames are the registered types' names, in order.
func conditionNames() []string { return names(conditionTypes, ConditionType.Type) }

// Evidence is what a condition needs read of its target beyond the
// namespace's own metadata; package probe reads it, each read bounded.
type Evidence struct {
	// Pods is the pods check it asks for with NeedPods; NoPods for none.
	Pods PodsEvidence
	// Activity: it asks for the target's newest activity with
	// NeedActivity. An answer from the sweep's index is confirmed by the
	// namespace's own lists before the policy acts.
	Activity bool
	// Touched: it reads the target's TouchedAnnotation, which a DELETE's
	// precondition then holds (see Manager.ReadsTouched).
	Touched bool
	// Owner: it weighs the target's owner (Input.Owner), read from the
	// sweep's one list of each owner kind. An owner that list did not find
	// is read again by name before the policy acts.
	Owner bool
}

// PodsEvidence is which pods check a condition asks for.
type PodsEvidence int

const (
	// NoPods: the condition reads no pods.
	NoPods PodsEvidence = iota
	// PodsNotSucceeded: a pod matching the condition's PodLabels that has
	// not succeeded, else a Job whose pod template matches that has not
	// finished (PodsCheck.NotSucceeded). A sweep's index of them can only
	// hold a check back: a pod may have started since it was listed.
	PodsNotSucceeded
	// PodsFailed: a pod matching PodLabels in phase Failed, else a
	// failed Job whose pod template matches (PodsCheck.Failed). What it
	// finds stays so: a sweep's index of them answers both ways.
	PodsFailed
)

// Evidence is what c's type needs read; none for a type not registered.
func (c Condition) Evidence() Evidence {
	if t, ok := LookupCondition(c.Type); ok {
		return t.Evidence()
	}
	return Evidence{}
}

// Needs reports whether the condition of one of m's policies needs what
// has says of its evidence.
func (m Manager) Needs(has func(Evidence) bool) bool {
	return slices.ContainsFunc(m.Policies, func(p Policy) bool { return has(p.Condition.Evidence()) })
}

// ReadsActivity reports whether one of m's conditions asks for its
// target's newest activity.
func (m Manager) ReadsActivity() bool { return m.Needs(func(e Evidence) bool { return e.Activity }) }

// ReadsTouched reports whether one of m's conditions reads its target's
// TouchedAnnotation: a DELETE is then made only while the namespace
// carries the one its decision read.
func (m Manager) ReadsTouched() bool { return m.Needs(func(e Evidence) bool { return e.Touched }) }

// ChecksPods reports whether one of m's conditions asks for the pods
// check q.
func (m Manager) ChecksPods(q PodsEvidence) bool {
	return m.Needs(func(e Evidence) bool { return e.Pods == q })
}

// Param is a parameter a condition reads under condition.params, as the
// CRD declares it.
type Param struct {
	// Key is its name under params.
	Key string
	// Kind is how its value is read.
	Kind ParamKind
	// Min is a whole number's least value; MaxSeconds is its greatest.
	Min int64
	// Default is a whole number's value when the key is absent.
	Default int64
	// Required, when set, makes the key required and says why.
	Required string
	// Absent says, for the reference, what nsman takes when the key is
	// absent and its Kind has no Default.
	Absent string
}

// ParamKind is how a parameter's value is read.
type ParamKind int

const (
	// ParamSeconds is a whole number of seconds.
	ParamSeconds ParamKind = iota
	// ParamCount is a whole number.
	ParamCount
	// ParamLabels is a map of label names to values.
	ParamLabels
	// ParamTime is an RFC 3339 time.
	ParamTime
	// ParamTraffic is a traffic source: a preset's name or a query (see
	// package traffic).
	ParamTraffic
)

// DefaultText is what nsman takes for prm when its key is absent, as the
// reference says it; "" for nothing (a required one).
func (prm Param) DefaultText() string {
	switch {
	case prm.Required != "":
		return ""
	case prm.Kind == ParamSeconds || prm.Kind == ParamCount:
		return strconv.FormatInt(prm.Default, 10)
	}
	return prm.Absent
}

// ReadBy returns the registered condition types that read the parameter
// key, in order.
func ReadBy(key string) []string {
	var by []string
	for _, t := range conditionTypes {
		if slices.ContainsFunc(t.Params(), func(prm Param) bool { return prm.Key == key }) {
			by = append(by, t.Type())
		}
	}
	return by
}

// AllParams returns every parameter a registered condition type reads,
// once each, in the order of the types that read them.
func AllParams() []Param {
	var all []Param
	for _, t := range conditionTypes {
		for _, prm := range t.Params() {
			if !slices.ContainsFunc(all, func(seen Param) bool { return seen.Key == prm.Key }) {
				all = append(all, prm)
			}
		}
	}
	return all
}

// secondsParam reads the whole-seconds parameter prm.
func (p *parser) secondsParam(params map[string]any, pp *field.Path, prm Param) time.Duration {
	return time.Duration(p.countParam(params, pp, prm)) * time.Second
}

// countParam reads the whole-number parameter prm: its Default when
// absent (reported, when it is Required).
func (p *parser) countParam(params map[string]any, pp *field.Path, prm Param) int64 {
	if _, ok := params[prm.Key]; !ok && prm.Required != "" {
		p.errs = append(p.errs, field.Required(pp.Child(prm.Key), prm.Required))
	}
	return p.integer(params, prm.Key, pp, prm.Default, prm.Min)
}

// checkParam checks prm's value as the CRD would, for a condition type
// that does not read it (see ParseStrict).
func (p *parser) checkParam(params map[string]any, pp *field.Path, prm Param) {
	switch prm.Kind {
	case ParamSeconds, ParamCount:
		p.integer(params, prm.Key, pp, 0, prm.Min)
	case ParamLabels:
		p.labels(params, prm.Key, pp)
	case ParamTime:
		p.instant(params, prm.Key, pp)
	case ParamTraffic:
		p.traffic(params, prm.Key, pp)
	}
}
