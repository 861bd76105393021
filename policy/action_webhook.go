package policy

import (
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// webhookAction is WEBHOOK: it posts the policy to params.url, as the
// original operator did, through the sweep's hook queue.
type webhookAction struct{}

func (webhookAction) Type() string          { return ActionWebhook }
func (webhookAction) NeverFinal() string    { return "" }
func (webhookAction) RemovesTarget() bool   { return false }
func (webhookAction) Queues() bool          { return true }
func (webhookAction) KeepsState() bool      { return false }
func (webhookAction) Reclaims() bool        { return false }
func (webhookAction) params() []actionParam { return webhookParams }

// webhookParams are what a WEBHOOK reads.
var webhookParams = []actionParam{urlParam}

// urlParam is params.url, where a WEBHOOK posts (Action.URL).
var urlParam = actionParam{name: "url", read: func(strict bool, params map[string]any, pp *field.Path, a Action, required bool) (Action, field.ErrorList) {
	p := parser{strict: strict}
	a.URL = p.url(params, pp, required)
	return a, p.errs
}}

// url reads params.url: an absolute http or https URL with a host and no
// credentials; required, a WEBHOOK's.
func (p *parser) url(params map[string]any, pp *field.Path, required bool) string {
	raw, wrongType := p.optionalStr(params, "url", pp)
	up := pp.Child("url")
	if wrongType {
		return raw
	}
	if raw == "" {
		if _, set := params["url"]; required || set {
			p.errs = append(p.errs, field.Required(up, "WEBHOOK needs an absolute http or https url"))
		}
		return raw
	}
	if p.strict && len(raw) > maxURLLength {
		p.errs = append(p.errs, field.TooLong(up, "", maxURLLength))
		return raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.errs = append(p.errs, field.Invalid(up, raw, err.Error()))
	case u.Scheme != "http" && u.Scheme != "https":
		p.errs = append(p.errs, field.Invalid(up, raw, "must be an absolute http or https url"))
	case u.Host == "" || u.Hostname() == "":
		p.errs = append(p.errs, field.Invalid(up, raw, "must name a host"))
	case u.User != nil:
		p.errs = append(p.errs, field.Invalid(up, raw, "must not carry credentials"))
	}
	return raw
}
