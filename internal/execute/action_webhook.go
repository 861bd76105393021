package execute

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// webhookAction posts the policy to its URL (see post), through the
// sweep's hook queue.
type webhookAction struct{ common }

// deferral defers a WEBHOOK whose receiver, or whose tenant's, timed out
// earlier in this sweep.
func (webhookAction) deferral(x *Executor, m policy.Manager, p *decide.Plan) error {
	return x.Writer.Silent(x.scope(m), p.Policy.Action.URL)
}

func (webhookAction) apply(ctx context.Context, x *Executor, m policy.Manager, _ record.Record, p *decide.Plan, _ *report.Reclaimed) (applied, error) {
	effects, err := x.post(ctx, m, p, p.Target)
	return applied{effects: effects}, err
}

// failed backs a WEBHOOK that failed or was deferred off (see
// decide.WebhookBackoff) from ended, so that a delivery that outlasted its
// backoff (a sweep long on receivers) is not due again at once, unless no
// receiver was tried for want of its Service, for a cause that may pass.
func (webhookAction) failed(e report.Entry, last, prev *status.LastAction, err error, ended time.Time) report.Entry {
	// A deferral backs off as the failures before it did, a failure
	// one step further.
	if prev != nil && prev.Result == report.ResultFailed && prev.Policy == last.Policy && prev.Action == last.Action {
		last.Failures = prev.Failures
	}
	if u, unread := errors.AsType[*unreadService](err); unread && !u.lasting {
		// No receiver was tried: nothing to back off from.
		return e
	}
	last.Deferred = webhook.Deferred(err)
	if !last.Deferred {
		last.Failures++
	}
	last.NextAttempt = decide.TimePtr(ended.Add(decide.WebhookBackoff(last.Failures)).UTC())
	e.Due = last.NextAttempt
	if last.Deferred {
		e.State = report.StateDeferred
	}
	return e
}

// post sends plan p's webhook of manager m about namespace t, as the trust
// of m's namespace allows (see route). What a tenant reads of a failure is
// webhook.Summary; the whole error goes to nsman's log.
func (x *Executor) post(ctx context.Context, m policy.Manager, p *decide.Plan, t decide.Target) ([]string, error) {
	route, err := x.route(ctx, m, p.Policy.Action.URL)
	if err != nil {
		return nil, err
	}
	body, err := webhook.Body(m.Namespace, m.Name, p.Policy.Raw, t.Name)
	if err != nil {
		return nil, err
	}
	key := firingKey(m, p)
	d, err := x.Writer.Deliver(ctx, route, p.Policy.Action.URL, body, key)
	switch {
	case err == nil:
	case webhook.Deferred(err):
		return nil, err
	case route.Tenant || m.Rule != nil:
		// A tenant reads a manager's record; a rule's record of a
		// namespace is on that namespace, for its tenant to read.
		x.Log.Warn("webhook not delivered", "manager", m.Namespace+"/"+m.Name, "namespace", t.Name, "policy", p.Policy.Name, "error", err.Error())
		return nil, tenantError{summary: webhook.Summary(d, err), err: err}
	default:
		return nil, err
	}
	// By origin: a URL's path or query may be a credential.
	return []string{fmt.Sprintf("POST %s (Idempotency-Key %s)", origin(p.Policy.Action.URL), key)}, nil
}

// origin is how a webhook's URL is shown: its scheme and host.
func origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return webhook.Origin(u)
}

// tenantError is a failed delivery as a tenant reads it (summary), which
// still tells whether it was deferred (err).
type tenantError struct {
	summary string
	err     error
}

func (e tenantError) Error() string { return e.summary }
func (e tenantError) Unwrap() error { return e.err }
