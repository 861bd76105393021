package policy

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/patch"
)

// scaleDownAction is SCALE_DOWN: it puts the workloads its selectors pick
// to sleep once, as the original operator scaled them to zero.
type scaleDownAction struct{}

func (scaleDownAction) Type() string          { return ActionScaleDown }
func (scaleDownAction) NeverFinal() string    { return "" }
func (scaleDownAction) RemovesTarget() bool   { return false }
func (scaleDownAction) Queues() bool          { return false }
func (scaleDownAction) KeepsState() bool      { return false }
func (scaleDownAction) Reclaims() bool        { return true }
func (scaleDownAction) params() []actionParam { return selectorParams }

// selectorParams are what SCALE_DOWN and SLEEP read.
var selectorParams = []actionParam{selectorsParam, replicasParam, loadBalancersParam, patchesParam}

// replicasParam is params.replicas, the replicas a workload of a kind with
// replicas keeps asleep (at least 0, 0 when absent); loadBalancersParam
// params.loadBalancers, whether Services of type LoadBalancer are parked
// as ClusterIP, whatever the selectors pick (false when absent);
// patchesParam params.patches, merge patches of custom resources' objects
// (none when absent), none of nsman's group or records (its annotations'
// prefix) nor of a kind selectors pick.
var replicasParam, loadBalancersParam, patchesParam = sleepToParam("replicas"), sleepToParam("loadBalancers"), sleepToParam("patches")
var patchRules = patch.Rules{OwnGroup: Group, AnnotationPrefix: strings.TrimSuffix(TouchedAnnotation, "touched"), Reserved: func(kind string) bool { return knownKind(kind) != "" }}

// sleepToParam is a parameter of SCALE_DOWN and SLEEP, read into
// Action.SleepTo; the strict parser refuses it on another action.
func sleepToParam(name string) actionParam {
	return actionParam{name: name, read: func(strict bool, params map[string]any, pp *field.Path, a Action, reads bool) (Action, field.ErrorList) {
		p := parser{strict: strict}
		switch name {
		case "replicas":
			a.SleepTo.Replicas = p.integer(params, name, pp, 0, 0)
		case "loadBalancers":
			a.SleepTo.LoadBalancers = p.boolean(params, name, pp)
		default:
			patches, errs := patch.Parse(params[name], pp.Child(name), patchRules)
			a.SleepTo.Patches, p.errs = patches, append(p.errs, errs...)
		}
		if params[name] != nil && !reads && len(p.errs) == 0 {
			p.errs = append(p.errs, field.Invalid(pp.Child(name), params[name], "only SCALE_DOWN and SLEEP read "+name))
		}
		return a, p.errs
	}}
}

// selectorsParam is params.selectors, the workloads SCALE_DOWN and SLEEP
// pick (Action.Selectors).
var selectorsParam = actionParam{name: "selectors", read: func(strict bool, params map[string]any, pp *field.Path, a Action, _ bool) (Action, field.ErrorList) {
	p := parser{strict: strict}
	a.Selectors = p.selectors(params, pp)
	return a, p.errs
}}

func (p *parser) selectors(params map[string]any, path *field.Path) []Selector {
	sp := path.Child("selectors")
	raw, ok := params["selectors"]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		p.errs = append(p.errs, field.Invalid(sp, raw, "must be a list"))
		return nil
	}
	p.tooMany(sp, len(list), maxSelectors)
	out := make([]Selector, 0, len(list))
	for i, item := range list {
		ip := sp.Index(i)
		obj, ok := item.(map[string]any)
		if !ok {
			p.errs = append(p.errs, field.Invalid(ip, item, "must be an object"))
			continue
		}
		s := Selector{Labels: p.labels(obj, "labels", ip)}
		kind, wrongType := p.optionalStr(obj, "kind", ip)
		switch known := knownKind(kind); {
		case known != "":
			s.Kind = known
		case kind == "":
			if !wrongType {
				p.errs = append(p.errs, field.Required(ip.Child("kind"), "Deployment, StatefulSet, CronJob, ScaledObject or a kind with a scale subresource"))
			}
		case !ScaleKindName.MatchString(kind):
			p.errs = append(p.errs, field.Invalid(ip.Child("kind"), kind, "must be Deployment, StatefulSet, CronJob, ScaledObject or a kind with a scale subresource, as Kind or Kind.group"))
		case knownKind(strings.TrimSuffix(kind, "s")) != "":
			p.errs = append(p.errs, field.Invalid(ip.Child("kind"), kind, "must name the kind, not the resource: "+knownKind(strings.TrimSuffix(kind, "s"))))
		case slices.Contains(unscalable, strings.ToLower(kind)):
			p.errs = append(p.errs, field.Invalid(ip.Child("kind"), kind, "has no scale subresource: nsman cannot put it to sleep"))
		default:
			s.Kind = kind
		}
		out = append(out, s)
	}
	return out
}
