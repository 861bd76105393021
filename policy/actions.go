package policy

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ActionKind is an action type's home in policy: the parameters it reads
// and the properties the rest of nsman asks of it, so that none of it
// names a particular action. Each is registered once, in actionKinds.
type ActionKind interface {
	// Type is the action's type as manifests spell it; the label of its
	// metrics (nsman_actions' action).
	Type() string
	// NeverFinal says why a policy of the action is never final (it acts
	// at each transition between two states); "" when it may be.
	NeverFinal() string
	// RemovesTarget: the action deletes the target namespace. It is its
	// own claim (made as the namespace was listed, it succeeds for one
	// sweep only), what it frees is read before it, an answer lost is
	// confirmed by the namespace going, and a record or an Event on the
	// target goes with it.
	RemovesTarget() bool
	// Queues: the action goes through the sweep's hook queue; while it
	// fails it backs off, and while its receiver is silent it is deferred.
	Queues() bool
	// KeepsState: the target is asleep while a policy of the action holds,
	// else awake. Its policies are judged together, the record keeps
	// the state, a wake undoes it and a put-back redoes it.
	KeepsState() bool
	// Reclaims: what the action frees is counted (report.Reclaimed,
	// nsman_reclaimed_*).
	Reclaims() bool
	// params are the parameters the action reads.
	params() []actionParam
}

// actionKinds are the action types, registered once, in the order an
// error lists them.
var actionKinds = []ActionKind{deleteAction{}, scaleDownAction{}, webhookAction{}, sleepAction{}}

// actionParams are the parameters any action reads, in the order the
// strict parser checks those an action does not read (the CRD checks every
// parameter it declares).
var actionParams = []actionParam{urlParam, selectorsParam, viaParam, replicasParam, loadBalancersParam, patchesParam}

// actionParam is one parameter of an action: read returns a with it read
// from params, and what is wrong with it; required when the action reads
// it (a WEBHOOK's url). It takes the parser's strict rather than the
// parser, which a call through a func value would move to the heap at
// every parse.
type actionParam struct {
	name string
	read func(strict bool, params map[string]any, pp *field.Path, a Action, required bool) (Action, field.ErrorList)
}

// ActionKindOf is the registered action of type typ; for a type none has,
// one with no parameter and none of the properties.
func ActionKindOf(typ string) ActionKind {
	if i := slices.IndexFunc(actionKinds, func(k ActionKind) bool { return k.Type() == typ }); i >= 0 {
		return actionKinds[i]
	}
	return unknownAction(typ)
}

// Kind is a's registered action type (see ActionKindOf).
func (a Action) Kind() ActionKind { return ActionKindOf(a.Type) }

// ActionTypes are the types of the registered actions, in their order.
func ActionTypes() []string { return names(actionKinds, ActionKind.Type) }

// ActionParams are the names of the parameters the actions read, in
// actionParams' order: those the CRD declares under action.params.
func ActionParams() []string {
	return names(actionParams, func(p actionParam) string { return p.name })
}

// names are the names of xs (name of each), in their order.
func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

// StateKeepingAction is the type of the registered action that keeps a
// state (see ActionKind.KeepsState), the one a record of a target asleep
// is by; "" when none does.
func StateKeepingAction() string {
	if i := slices.IndexFunc(actionKinds, ActionKind.KeepsState); i >= 0 {
		return actionKinds[i].Type()
	}
	return ""
}

// unknownAction is a type no action has: the parser refuses it.
type unknownAction string

func (u unknownAction) Type() string        { return string(u) }
func (unknownAction) NeverFinal() string    { return "" }
func (unknownAction) RemovesTarget() bool   { return false }
func (unknownAction) Queues() bool          { return false }
func (unknownAction) KeepsState() bool      { return false }
func (unknownAction) Reclaims() bool        { return false }
func (unknownAction) params() []actionParam { return nil }

// readAction is a with the parameters its type reads (wrongType: the type
// was not a string), the others checked when strict.
func (p *parser) readAction(a Action, wrongType bool, params map[string]any, path *field.Path) Action {
	typ := a.Type
	pp := path.Child("params")
	kind := ActionKindOf(typ)
	_, unknown := kind.(unknownAction)
	switch {
	case !unknown:
		for _, param := range kind.params() {
			var errs field.ErrorList
			a, errs = param.read(p.strict, params, pp, a, true)
			p.errs = append(p.errs, errs...)
		}
	case typ == "":
		if !wrongType {
			p.errs = append(p.errs, field.Required(path.Child("type"), ""))
		}
	default:
		p.errs = append(p.errs, field.NotSupported(path.Child("type"), typ, ActionTypes()))
	}
	if p.strict {
		for _, param := range actionParams {
			if !reads(kind, param.name) {
				_, errs := param.read(p.strict, params, pp, Action{}, false)
				p.errs = append(p.errs, errs...)
			}
		}
	}
	return a
}

// reads reports whether an action of kind reads the parameter called name.
func reads(kind ActionKind, name string) bool {
	return slices.ContainsFunc(kind.params(), func(own actionParam) bool { return own.name == name })
}
