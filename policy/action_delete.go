package policy

import "k8s.io/apimachinery/pkg/util/validation/field"

// deleteAction is DELETE: it deletes the target namespace, as the
// original operator did; with params.via owner, through the namespace's
// owner (Action.Via).
type deleteAction struct{}

func (deleteAction) Type() string          { return ActionDelete }
func (deleteAction) NeverFinal() string    { return "" }
func (deleteAction) RemovesTarget() bool   { return true }
func (deleteAction) Queues() bool          { return false }
func (deleteAction) KeepsState() bool      { return false }
func (deleteAction) Reclaims() bool        { return true }
func (deleteAction) params() []actionParam { return deleteParams }

// deleteParams are what a DELETE reads.
var deleteParams = []actionParam{viaParam}

// ViaOwner is Action.Via for a DELETE through the namespace's owner: the
// owner is deleted first, the namespace by a later sweep once the owner
// is gone, so that nothing recreates it.
const ViaOwner = "owner"

// viaParam is params.via, what a DELETE deletes through (Action.Via):
// ViaOwner, or nothing. Only a DELETE reads it: set on another action,
// the strict parser refuses it.
var viaParam = actionParam{name: "via", read: func(strict bool, params map[string]any, pp *field.Path, a Action, reads bool) (Action, field.ErrorList) {
	p := parser{strict: strict}
	raw, wrongType := p.optionalStr(params, "via", pp)
	switch {
	case wrongType || raw == "" && params["via"] == nil:
	case !reads:
		p.errs = append(p.errs, field.Invalid(pp.Child("via"), raw, "only a DELETE reads via"))
	case raw != ViaOwner:
		p.errs = append(p.errs, field.NotSupported(pp.Child("via"), raw, []string{ViaOwner}))
	default:
		a.Via = raw
	}
	return a, p.errs
}}
