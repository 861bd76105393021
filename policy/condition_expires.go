package policy

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// atParam is EXPIRES's parameter: when it holds; without it, when the
// target's ExpiresAnnotation says.
var atParam = Param{Key: "at", Kind: ParamTime}

// expiresCondition is EXPIRES: the policy holds once params.at, else the
// time the target's ExpiresAnnotation says, has passed.
type expiresCondition struct{}

func (expiresCondition) Type() string       { return ConditionExpires }
func (expiresCondition) Params() []Param    { return []Param{atParam} }
func (expiresCondition) Evidence() Evidence { return Evidence{} }

func (expiresCondition) parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList) {
	p := parser{strict: strict}
	c := Condition{At: p.instant(params, atParam.Key, pp)}
	return c, p.errs
}

func (expiresCondition) judge(j judging) (Verdict, PolicyState, map[string]CheckState) {
	verdict := judgeExpires(&j.state, j.p.Condition, j.in)
	return verdict, j.state, j.checks
}

// judgeExpires judges an EXPIRES condition: it holds once c.At, else the
// target's ExpiresAnnotation, has passed.
func judgeExpires(state *PolicyState, c Condition, in Input) Verdict {
	at, by := c.At, "params.at"
	if at.IsZero() {
		if in.TargetExpires == "" {
			state.Detail = "the namespace has no annotation " + ExpiresAnnotation + ": it never expires by it"
			return Wait
		}
		var err error
		if at, err = ParseExpiry(in.TargetExpires); err != nil {
			state.Problem = fmt.Sprintf("annotation %s: %v: the namespace never expires by it", ExpiresAnnotation, err)
			state.Detail = state.Problem
			return Wait
		}
		by = "annotation " + ExpiresAnnotation
	}
	if !in.Now.Before(at) {
		state.Holds = true
		state.Detail = fmt.Sprintf("expired at %s (%s)", stamp(at), by)
		return Fire
	}
	state.Detail = fmt.Sprintf("expires at %s (%s)", stamp(at), by)
	state.Due = at
	return Wait
}

// ParseExpiry parses an ExpiresAnnotation: an RFC 3339 time, or a date
// YYYY-MM-DD, which expires at the end of that day in UTC (midnight after
// it).
func ParseExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.AddDate(0, 0, 1), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-12-01T18:00:00Z) nor a date (2026-12-01)", cut(s, 64))
}
