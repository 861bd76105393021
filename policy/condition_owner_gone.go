package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/durtext"
)

// ConditionOwnerGone is nsman's own: it needs nsman's CRD.
const ConditionOwnerGone = "OWNER_GONE"

// graceParam is OWNER_GONE's parameter: how long the owner must be gone.
var graceParam = Param{Key: "graceSeconds", Kind: ParamSeconds, Default: 300}

// ownerGoneCondition is OWNER_GONE: the policy holds once the target's
// owner (Input.Owner) has been gone for params.graceSeconds.
type ownerGoneCondition struct{}

func (ownerGoneCondition) Type() string       { return ConditionOwnerGone }
func (ownerGoneCondition) Params() []Param    { return []Param{graceParam} }
func (ownerGoneCondition) Evidence() Evidence { return Evidence{Owner: true} }

func (ownerGoneCondition) parse(params map[string]any, pp *field.Path, strict bool) (Condition, field.ErrorList) {
	p := parser{strict: strict}
	c := Condition{Grace: p.secondsParam(params, pp, graceParam)}
	return c, p.errs
}

func (ownerGoneCondition) judge(j judging) (Verdict, PolicyState, map[string]CheckState) {
	verdict, checks := judgeOwnerGone(&j.state, j.p, j.in, j.checks)
	return verdict, j.state, checks
}

// judgeOwnerGone judges policy p, an OWNER_GONE condition: it holds once
// in.Owner has been gone for the grace since the first sweep that found it
// gone. checks keeps, under p's name, the owner's ref and that time: an
// owner present clears the time, another owner starts over, and one that
// cannot be read (OwnerUnknown) changes nothing and never holds.
func judgeOwnerGone(state *PolicyState, p Policy, in Input, checks map[string]CheckState) (Verdict, map[string]CheckState) {
	o, grace := in.Owner, p.Condition.Grace
	switch {
	case o == nil:
		state.Detail = "the namespace names no owner and its record remembers none: " + ConditionOwnerGone + " never holds on it"
		return Wait, checks
	case o.Presence == OwnerUnknown:
		state.Detail = fmt.Sprintf("whether owner %s exists is not known: %s", ownerText(o), cut(o.Why, maxShownText))
		return Wait, checks
	}
	kept, was := CheckState{Owner: o.Ref}, in.Checks[p.Name]
	switch {
	case o.Presence != OwnerGone:
	case was.Owner == o.Ref && !was.GoneSince.IsZero():
		kept.GoneSince = was.GoneSince.UTC()
	default:
		kept.GoneSince = in.Now.UTC()
	}
	if checks == nil {
		checks = map[string]CheckState{}
	}
	checks[p.Name] = kept
	due := kept.GoneSince.Add(grace)
	switch {
	case o.Presence == OwnerPresent:
		state.Detail = fmt.Sprintf("owner %s exists", ownerText(o))
		return Wait, checks
	case !in.Now.Before(due):
		state.Holds = true
		state.Detail = fmt.Sprintf("owner %s gone since %s; grace %s elapsed at %s", ownerText(o), stamp(kept.GoneSince), durtext.Format(grace), stamp(due))
		return Fire, checks
	}
	state.Detail = fmt.Sprintf("owner %s gone since %s; grace %s elapses at %s", ownerText(o), stamp(kept.GoneSince), durtext.Format(grace), stamp(due))
	state.Due = due
	return Wait, checks
}

// ownerText names o in a message, bounded: what a marker says is a
// tenant's text.
func ownerText(o *Owner) string {
	if o.Ref == "" {
		return "named by " + cut(o.By, maxShownValue)
	}
	return cut(o.Ref, maxShownText) + " (" + cut(o.By, maxShownValue) + ")"
}
