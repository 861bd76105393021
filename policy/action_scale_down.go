package policy

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
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
var selectorParams = []actionParam{selectorsParam, replicasParam, loadBalancersParam}

// replicasParam is params.replicas, the replicas SCALE_DOWN and SLEEP
// leave a workload of a kind with replicas at (Action.SleepTo.Replicas):
// a whole number of at least 0, 0 when absent. Only they read it: set on
// another action, the strict parser refuses it.
var replicasParam = actionParam{name: "replicas", read: func(strict bool, params map[string]any, pp *field.Path, a Action, reads bool) (Action, field.ErrorList) {
	p := parser{strict: strict}
	n := p.integer(params, "replicas", pp, 0, 0)
	if params["replicas"] != nil && !reads && len(p.errs) == 0 {
		p.errs = append(p.errs, field.Invalid(pp.Child("replicas"), n, "only SCALE_DOWN and SLEEP read replicas"))
	}
	a.SleepTo.Replicas = n
	return a, p.errs
}}

// loadBalancersParam is params.loadBalancers, whether SCALE_DOWN and
// SLEEP park the namespace's Services of type LoadBalancer as ClusterIP
// (Action.SleepTo.LoadBalancers), whatever the selectors pick: a cloud
// load balancer is paid for by the hour whether pods answer behind it or
// not. false when absent. Only they read it.
var loadBalancersParam = actionParam{name: "loadBalancers", read: func(strict bool, params map[string]any, pp *field.Path, a Action, reads bool) (Action, field.ErrorList) {
	p := parser{strict: strict}
	on := p.boolean(params, "loadBalancers", pp)
	if params["loadBalancers"] != nil && !reads && len(p.errs) == 0 {
		p.errs = append(p.errs, field.Invalid(pp.Child("loadBalancers"), on, "only SCALE_DOWN and SLEEP read loadBalancers"))
	}
	a.SleepTo.LoadBalancers = on
	return a, p.errs
}}

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
