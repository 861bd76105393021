package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podsFailedCondition is PODS_FAILED: the policy holds once a pod matching
// params.podLabels, or a Job whose pods match, failed.
type podsFailedCondition struct{}

func (podsFailedCondition) Type() string       { return ConditionPodsFailed }
func (podsFailedCondition) Params() []Param    { return []Param{initialDelayParam, podLabelsParam} }
func (podsFailedCondition) Evidence() Evidence { return Evidence{Pods: PodsFailed} }

func (podsFailedCondition) parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList) {
	p := parser{strict: strict}
	c := Condition{
		InitialDelay: p.secondsParam(params, pp, initialDelayParam),
		PodLabels:    p.labels(params, podLabelsParam.Key, pp),
	}
	return c, p.errs
}

func (podsFailedCondition) judge(j judging) (Verdict, PolicyState, map[string]CheckState) {
	verdict := judgePodsFailed(&j.state, j.i, j.p.Condition, j.in)
	return verdict, j.state, j.checks
}

// judgePodsFailed judges the i-th policy's PODS_FAILED condition c: it holds
// once a matching pod, or a Job whose pods match, failed.
func judgePodsFailed(state *PolicyState, i int, c Condition, in Input) Verdict {
	if delayed(state, in, c, "first check for failed pods") {
		return Wait
	}
	pods, checked := in.Pods[i]
	if !checked {
		return NeedPods
	}
	selector := describeSelector(c.PodLabels)
	if pods.Failed > 0 {
		state.Holds = true
		state.Detail = fmt.Sprintf("a pod %s failed: %s", selector, pods.Example)
		return Fire
	}
	state.Detail = fmt.Sprintf("no pod %s has failed", selector)
	return Wait
}
