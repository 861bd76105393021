package policy

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/durtext"
)

// ttlSecondsParam is TTL's parameter: the target's age at which it holds.
var ttlSecondsParam = Param{Key: "ttlSeconds", Kind: ParamSeconds, Default: int64(DefaultTTL / time.Second)}

// ttlCondition is TTL: the policy holds once the target is this old.
type ttlCondition struct{}

func (ttlCondition) Type() string       { return ConditionTTL }
func (ttlCondition) Params() []Param    { return []Param{ttlSecondsParam} }
func (ttlCondition) Evidence() Evidence { return Evidence{} }

func (ttlCondition) parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList) {
	p := parser{strict: strict}
	c := Condition{TTL: p.secondsParam(params, pp, ttlSecondsParam)}
	return c, p.errs
}

func (ttlCondition) judge(j judging) (Verdict, PolicyState, map[string]CheckState) {
	verdict := judgeTTL(&j.state, j.p.Condition, j.in)
	return verdict, j.state, j.checks
}

// judgeTTL judges a TTL condition: it holds once the target is c.TTL old.
func judgeTTL(state *PolicyState, c Condition, in Input) Verdict {
	due := in.TargetCreated.Add(c.TTL)
	if !in.Now.Before(due) {
		state.Holds = true
		state.Detail = fmt.Sprintf("TTL %s elapsed at %s", durtext.Format(c.TTL), stamp(due))
		return Fire
	}
	state.Detail = fmt.Sprintf("TTL %s elapses at %s", durtext.Format(c.TTL), stamp(due))
	state.Due = due
	return Wait
}
