package policy

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PODS_SUCCEED's parameters of its own: how far apart its checks count,
// and how many in a row must pass.
var (
	periodParam    = Param{Key: "periodSeconds", Kind: ParamSeconds, Min: 1, Default: int64(DefaultPeriod / time.Second)}
	minChecksParam = Param{Key: "minChecks", Kind: ParamCount, Min: 1, Default: DefaultMinChecks}
)

// podsSucceedCondition is PODS_SUCCEED: the policy holds once every pod
// matching params.podLabels succeeded in minChecks consecutive checks.
type podsSucceedCondition struct{}

func (podsSucceedCondition) Type() string { return ConditionPodsSucceed }
func (podsSucceedCondition) Params() []Param {
	return []Param{initialDelayParam, periodParam, minChecksParam, podLabelsParam}
}
func (podsSucceedCondition) Evidence() Evidence { return Evidence{Pods: PodsNotSucceeded} }

func (podsSucceedCondition) parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList) {
	p := parser{strict: strict}
	c := Condition{
		InitialDelay: p.secondsParam(params, pp, initialDelayParam),
		Period:       p.secondsParam(params, pp, periodParam),
		MinChecks:    int(p.countParam(params, pp, minChecksParam)),
		PodLabels:    p.labels(params, podLabelsParam.Key, pp),
	}
	return c, p.errs
}

func (podsSucceedCondition) judge(j judging) (Verdict, PolicyState, map[string]CheckState) {
	out := Outcome{Checks: j.checks}
	verdict := judgePodsSucceed(&j.state, &out, j.generation, j.i, j.p, j.in)
	return verdict, j.state, out.Checks
}

// judgePodsSucceed judges policy p, the i-th, a PODS_SUCCEED condition: it
// holds once every matching pod succeeded in MinChecks consecutive checks,
// Period apart, whose progress it keeps in out.Checks under the manager's
// generation.
func judgePodsSucceed(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) Verdict {
	c := p.Condition
	if delayed(state, in, c, "first pods check") {
		return Wait
	}
	progress := in.Checks[p.Name]
	if progress.Generation != generation {
		progress = CheckState{}
	}
	if c.MinChecks > 1 && progress.Passed > 0 {
		if next := progress.Last.Add(c.Period); in.Now.Before(next) {
			state.Detail = fmt.Sprintf("%d of %d checks passed, next at %s", progress.Passed, c.MinChecks, stamp(next))
			state.Due = next
			return Wait
		}
	}
	pods, checked := in.Pods[i]
	if !checked {
		return NeedPods
	}
	selector := describeSelector(c.PodLabels)
	if pods.NotSucceeded > 0 {
		delete(out.Checks, p.Name)
		state.Detail = fmt.Sprintf("not every pod %s Succeeded: %s", selector, pods.Example)
		return Wait
	}
	passed := progress.Passed + 1
	if passed >= c.MinChecks {
		state.Holds = true
		state.Detail = fmt.Sprintf("every pod %s Succeeded", selector)
		if c.MinChecks > 1 {
			state.Detail += fmt.Sprintf(" in %d consecutive checks", passed)
		}
		return Fire
	}
	if out.Checks == nil {
		out.Checks = map[string]CheckState{}
	}
	out.Checks[p.Name] = CheckState{Generation: generation, Passed: passed, Last: in.Now}
	state.Due = in.Now.Add(c.Period)
	state.Detail = fmt.Sprintf("%d of %d checks passed, next at %s", passed, c.MinChecks, stamp(state.Due))
	return Wait
}
