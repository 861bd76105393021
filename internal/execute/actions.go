package execute

import (
	"context"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// applied is what an action did (would do, dry): its effects, and what
// it freed, for a DELETE or SCALE_DOWN when known.
type applied struct {
	effects   []string
	reclaimed *report.Reclaimed
}

// apply performs plan p's action through the writer and returns what it
// did (would do, dry). A fresh DELETE is made as listed (see write.AsListed),
// after what it frees (freed, nil when unknown) was read.
func (x *Executor) apply(ctx context.Context, m policy.Manager, rec record.Record, p *decide.Plan, freed *report.Reclaimed) (applied, error) {
	t := p.Target
	switch p.Policy.Action.Type {
	case policy.ActionDelete:
		if p.Step == decide.StepAct {
			unchanged := rec.Unchanged
			if !m.Idles() {
				unchanged = func(listed, now cluster.Namespace) bool {
					return rec.Unchanged(listed.WithoutTouch(), now.WithoutTouch())
				}
			}
			err := write.AsListed(ctx, t.Listed, x.Reads.NamespaceNow, unchanged, func(resourceVersion string) error {
				return x.Writer.DeleteNamespace(ctx, t.Name, t.UID, resourceVersion)
			})
			if err != nil {
				return applied{}, fmt.Errorf("delete namespace %s: %w", t.Name, err)
			}
			return applied{effects: []string{"delete namespace " + t.Name}, reclaimed: freed}, nil
		}
		effects, err := x.deleteClaimed(ctx, t)
		return applied{effects: effects}, err
	case policy.ActionScaleDown:
		if t.Recreated {
			return applied{effects: []string{"scale down in namespace " + t.Name + ": the namespace the claim was made for is gone; the new one of that name is left alone"}}, nil
		}
		return x.scaleDown(ctx, t.Name, p.Policy.Action.Selectors)
	case policy.ActionWebhook:
		effects, err := x.post(ctx, m, p, t)
		return applied{effects: effects}, err
	}
	return applied{}, fmt.Errorf("unknown action %q", p.Policy.Action.Type)
}

// freedByDelete is what plan p's fresh DELETE will free, read before it;
// nil for any other plan and with --reclaim=false. When reading it fails
// or takes too long (see probe.Reclaim.Namespace), the error says why: the
// DELETE goes ahead, what it freed unknown.
func (x *Executor) freedByDelete(ctx context.Context, p *decide.Plan) (*report.Reclaimed, error) {
	if x.SkipReclaim || p.Step != decide.StepAct || p.Policy.Action.Type != policy.ActionDelete {
		return nil, nil
	}
	freed, err := x.Reclaim.Namespace(ctx, p.Target.Name)
	if err != nil {
		x.Log.Warn("what the DELETE frees is not known", "namespace", p.Target.Name, "error", err.Error())
		return nil, err
	}
	return &freed, nil
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

// deleteClaimed deletes, for an expired claim, the namespace it was made
// for, by UID; one going or gone needs nothing, one recreated since is
// left alone. A 409 is read again: a webhook may refuse with one too.
func (x *Executor) deleteClaimed(ctx context.Context, t decide.Target) ([]string, error) {
	effect := "delete namespace " + t.Name
	if t.Going {
		return []string{effect + " (already being deleted)"}, nil
	}
	err := x.Writer.DeleteNamespace(ctx, t.Name, t.UID, "")
	if apierrors.IsConflict(err) {
		if now, exists, rerr := x.Reads.NamespaceNow(ctx, t.Name); rerr == nil && (!exists || now.UID != t.UID) {
			return []string{effect + " (already gone; a new namespace of that name is left alone)"}, nil
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return []string{effect + " (already gone)"}, nil
	case err != nil:
		return nil, fmt.Errorf("delete namespace %s: %w", t.Name, err)
	}
	return []string{effect}, nil
}

// scaleDown scales every selected workload with replicas above zero to zero,
// one request each, recording the count each had (see ScaleToZero), and
// sums what the workloads scaled free (with --reclaim).
func (x *Executor) scaleDown(ctx context.Context, namespace string, selectors []policy.Selector) (applied, error) {
	var freed report.Reclaimed
	effects, err := EachWorkload(ctx, x.Reads.Clients, namespace, selectors, func(resource schema.GroupVersionResource, kind string, w *unstructured.Unstructured) (string, error) {
		effect, scaled, err := ScaleToZero(ctx, x.Reads.Clients, x.Writer, resource, kind, w)
		if scaled != nil {
			freed.Add(probe.ScalingFrees(scaled))
		}
		return effect, err
	})
	out := applied{effects: effects}
	if !x.SkipReclaim {
		out.reclaimed = &freed
	}
	return out, err
}

// Notify sends the notification of the outcome of plan p's action, when
// the sweep has a notifier; a failure is told once. Its Idempotency-Key is
// derived from the firing's and the result: the same outcome, told again by
// a sweep completing a claim, carries the same key. A notification that
// fails is logged, without the URL's path, and counted; it changes nothing
// else.
func (x *Executor) Notify(ctx context.Context, m policy.Manager, p *decide.Plan, effects []string, reclaimed *report.Reclaimed, actionErr error, failedBefore bool) {
	if x.Notifier == nil || actionErr != nil && failedBefore {
		return
	}
	result, message := report.ResultSucceeded, p.Reason
	if actionErr != nil {
		result, message = report.ResultFailed, actionErr.Error()
	}
	n := tell.Notification{
		Manager: tell.NotificationManager{Namespace: m.Namespace, Name: m.Name}, Rule: m.Rule != nil, Target: p.Target.Name,
		Policy: p.Policy.Name, Action: p.Policy.Action.Type, Result: result, Message: status.Truncate(message, status.MaxMessage), Effects: effects,
		Time: x.Now.UTC(), Sweep: x.SweepID, Version: x.Version,
	}
	n.Reclaimed = reclaimed // a SCALE_DOWN that failed part-way freed what it scaled
	if err := x.Notifier.Send(ctx, n, status.Digest("%s/%s", firingKey(m, p), result)); err != nil {
		x.Counts.NotifyFailed.Add(1)
		x.Log.Error("notification not delivered", "manager", m.Namespace+"/"+m.Name, "namespace", p.Target.Name, "policy", p.Policy.Name, "error", x.Notifier.Redact(err))
		return
	}
	x.Counts.NotifySent.Add(1)
}
