package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// The executor is the one place a decision is carried out, for a manager
// and for one namespace of a rule alike: the action cap, the claim, the
// action, the notification, the record of the outcome and the Events. What
// differs is their record's (record.Manager, record.Pair) and their sink's
// (tell.ManagerEvents, tell.RuleTally).
//
// No write clobbers another sweep's: a claim, and a record written without
// one, are conditional on the version listed (or test the record listed);
// the outcome of a claimed action tests first that the claim is still this
// sweep's; and a DELETE is its own claim: preconditioned on the namespace's
// UID and resourceVersion as listed, it succeeds for one sweep only (the
// first changes the namespace), which alone records, tells and notifies.

// claimMargin is kept between the end of an action's deadline and the expiry
// of its claim, so that no sweep can take over a claim whose action may still
// run.
const claimMargin = 5 * time.Second

// carryOut carries out decision d for the subject whose record is rec, and
// tells rec's sink what became of it.
func (s *Sweeper) carryOut(ctx context.Context, r *sweepRun, rec record.Record, d decide.Decision) report.Entry {
	p, e := d.Plan, d.Entry
	acted, recorded := false, true
	var deferral error // the receiver, or the tenant's, timed out earlier in this sweep
	if !d.Untouched && p != nil && p.Step == decide.StepAct && p.Policy.Action.Type == policy.ActionWebhook {
		deferral = s.writer.Silent(s.scope(d.Manager), p.Policy.Action.URL)
	}
	switch {
	case d.Untouched:
	case p == nil:
		e, recorded = s.save(ctx, rec, record.Outcome{Entry: e, Checks: d.Checks, StuckOnly: d.StuckOnly, StuckUnread: d.StuckUnread})
	case p.Step == decide.StepDeactivate || p.Step == decide.StepConfirmDelete:
		e, recorded = s.finish(ctx, r, rec, p, e)
	case r.frozen:
		// Nothing acts in a freeze: due, the subject waits for its end. A
		// claim to complete stays as it is, for the first sweep after.
		e.State, e.Message, e.Due = report.StateWaiting, fmt.Sprintf("%s; frozen until %s (--freeze)", p.Reason, r.frozenUntil.UTC().Format(time.RFC3339)), decide.TimePtr(r.frozenUntil)
		if p.Step != decide.StepCompleteClaim {
			e, recorded = s.save(ctx, rec, record.Outcome{Entry: e, Checks: d.Checks})
		}
	case r.stop.Err() != nil:
		// Interrupted while this subject was evaluated: no action starts.
		e = notReached(e, "it acted")
	case deferral != nil:
		// Deferred, backing off, with no claim and no place under
		// --max-actions.
		_, o := s.outcomeOf(e, p, fmt.Errorf("webhook: %w", deferral), r.now, rec.Prior().Last)
		e, recorded = s.save(ctx, rec, o)
	case s.cfg.MaxActions > 0 && !d.Granted:
		e.State, e.Message = report.StateDeferred, fmt.Sprintf("%s; deferred: --max-actions %d reached (its places go round-robin across namespaces)", p.Reason, s.cfg.MaxActions)
		e, recorded = s.save(ctx, rec, record.Outcome{Entry: e})
	default:
		e, acted, recorded = s.act(ctx, r, rec, d)
	}
	rec.Sink().Tell(ctx, e, rec.Prior(), acted, recorded)
	return e
}

// wantsPlace reports whether carrying out d takes a place under
// --max-actions: an action is due, and nothing else keeps it from starting
// (a freeze, an interrupt, a receiver silent earlier in the sweep).
func (s *Sweeper) wantsPlace(r *sweepRun, d decide.Decision) bool {
	p := d.Plan
	switch {
	case s.cfg.MaxActions == 0 || d.Untouched || p == nil || p.Step == decide.StepDeactivate || p.Step == decide.StepConfirmDelete || r.frozen || r.stop.Err() != nil:
		return false
	case p.Step == decide.StepAct && p.Policy.Action.Type == policy.ActionWebhook:
		return s.writer.Silent(s.scope(d.Manager), p.Policy.Action.URL) == nil
	}
	return true
}

// offer offers the subject of entry e a place under --max-actions (see
// fairShare), carryOut to carry out its decision once granted one, or
// deferred; the one pushed out, if any, is deferred at once. The places
// are granted, and acted on, once every subject is evaluated (grant).
func (s *Sweeper) offer(r *sweepRun, e report.Entry, carryOut func(granted bool)) {
	if out := r.share.offer(&candidate{namespace: e.Target, key: e.Namespace + "/" + e.Name, carryOut: carryOut}); out != nil {
		out.carryOut(false)
	}
}

// grant carries out the plans placed under --max-actions, Concurrency at a
// time, then what waited for them (the rules with pairs among them).
func (s *Sweeper) grant(r *sweepRun) {
	if s.cfg.MaxActions == 0 {
		return
	}
	granted := r.share.granted()
	r.bounded(len(granted), func(i int) { granted[i].carryOut(true) })
	r.bounded(len(r.afterGrant), func(i int) { r.afterGrant[i]() })
}

// save records a final entry, if the record keeps anything of it, and
// reports whether it did (or had nothing to).
func (s *Sweeper) save(ctx context.Context, rec record.Record, o record.Outcome) (report.Entry, bool) {
	if err := rec.Write(ctx, o); write.ChangedSinceListed(err) {
		return busy(o.Entry, err), false
	} else if err != nil {
		return decide.Failed(o.Entry, fmt.Errorf("record the outcome: %w", err)), false
	}
	return o.Entry, true
}

// act carries out the plan's action, claimed first unless it is a fresh
// DELETE, and records its outcome; it reports whether the action was
// attempted, and whether its outcome was recorded. The claim expires
// ClaimTTL after it is made, in the API server's time, and the action's
// deadline is claimMargin earlier, counted from the same moment: no other
// sweep takes the claim over while the action may run.
func (s *Sweeper) act(ctx context.Context, r *sweepRun, rec record.Record, d decide.Decision) (report.Entry, bool, bool) {
	p, e := d.Plan, d.Entry
	// What a fresh DELETE frees is read before it, within bounds of its
	// own: the action's deadline starts after, and an interrupt meanwhile
	// keeps the DELETE from starting.
	freed, unknown := s.freedByDelete(ctx, r, p)
	if r.stop.Err() != nil {
		return notReached(e, "it acted"), false, true
	}
	deadline := time.Now().Add(s.cfg.ClaimTTL - claimMargin)
	claimed := p.Step != decide.StepAct || p.Policy.Action.Type != policy.ActionDelete
	if claimed {
		c := status.Claim{Policy: p.Policy.Name, Action: p.Policy.Action.Type, Sweep: s.cfg.SweepID,
			Expires: s.clock().Add(s.cfg.ClaimTTL).UTC(), Generation: p.Generation, TargetUID: p.Target.UID}
		acting := e
		acting.State, acting.Message = status.StateActing, fmt.Sprintf("sweep %s is acting (%s): %s", s.cfg.SweepID, p.Policy.Action.Type, p.Reason)
		if err := rec.Claim(ctx, c, acting, p.Policy.Final); write.ChangedSinceListed(err) {
			return busy(e, err), false, false
		} else if err != nil {
			e, recorded := s.save(ctx, rec, record.Outcome{Entry: decide.Failed(e, fmt.Errorf("claim: %w", err))})
			return e, false, recorded
		}
	}
	actCtx, cancel := context.WithDeadline(ctx, deadline)
	did, err := s.apply(actCtx, d.Manager, rec, p, freed)
	cancel()
	if !claimed && write.ChangedSinceListed(err) {
		// The DELETE found the namespace changed: nothing was done.
		return busy(e, err), false, false
	}
	e.Effects = did.effects
	switch {
	case err == nil && unknown != nil:
		r.reclaimUnknown.Add(1)
		e.Effects = append(e.Effects, "what it freed is not known: "+unknown.Error())
	case err == nil || did.reclaimed != nil && !did.reclaimed.IsZero():
		// A SCALE_DOWN that failed part-way freed what it scaled.
		e.Reclaimed = did.reclaimed
	}
	if !webhook.Deferred(err) {
		defer s.notify(ctx, r, d.Manager, p, e.Effects, e.Reclaimed, err, failedBefore(rec.Prior().Last, p))
	}
	if err == nil && p.Policy.Action.Type == policy.ActionDelete && p.Target.Home {
		// The record went with the namespace.
		return s.succeeded(e, p), true, true
	}
	e, o := s.outcomeOf(e, p, err, r.now, rec.Prior().Last)
	if werr := rec.Write(ctx, o); werr != nil && err != nil {
		return decide.Failed(e, fmt.Errorf("%s; recording it failed: %w", e.Message, werr)), true, false
	} else if werr != nil {
		return decide.Failed(e, fmt.Errorf("action done, but recording it failed: %w", werr)), true, false
	}
	return e, true, true
}

// outcomeOf is the entry and the record of plan p's action, done or
// failed with err, prev being the last action recorded before. A WEBHOOK
// that failed or was deferred backs off (see decide.WebhookBackoff), unless no
// receiver was tried for want of its Service, for a cause that may pass.
func (s *Sweeper) outcomeOf(e report.Entry, p *decide.Plan, err error, now time.Time, prev *status.LastAction) (report.Entry, record.Outcome) {
	last := &status.LastAction{Policy: p.Policy.Name, Action: p.Policy.Action.Type, Result: report.ResultSucceeded, Message: status.Truncate(p.Reason, status.MaxMessage), Time: now.UTC(),
		TargetUID: p.Target.UID}
	if err != nil {
		e = decide.Failed(e, err)
		last.Result, last.Message = report.ResultFailed, status.Truncate(err.Error(), status.MaxMessage)
		last.Uncertain = p.Policy.Action.Type == policy.ActionDelete && write.Uncertain(err)
		last.Reclaimed = e.Reclaimed
		if p.Policy.Action.Type == policy.ActionWebhook {
			// A deferral backs off as the failures before it did, a failure
			// one step further.
			if prev != nil && prev.Result == report.ResultFailed && prev.Policy == p.Policy.Name && prev.Action == policy.ActionWebhook {
				last.Failures = prev.Failures
			}
			if u, unread := errors.AsType[*unreadService](err); unread && !u.lasting {
				// No receiver was tried: nothing to back off from.
				return e, record.Outcome{Entry: e, Last: last}
			}
			last.Deferred = webhook.Deferred(err)
			if !last.Deferred {
				last.Failures++
			}
			last.NextAttempt = decide.TimePtr(now.Add(decide.WebhookBackoff(last.Failures)).UTC())
			e.Due = last.NextAttempt
			if last.Deferred {
				e.State = report.StateDeferred
			}
		}
		return e, record.Outcome{Entry: e, Last: last}
	}
	e = s.succeeded(e, p)
	last.Reclaimed = e.Reclaimed
	o := record.Outcome{Entry: e, Last: last, Done: p.Policy.Final}
	if !p.Policy.Final {
		// A stage: recorded as fired, the subject left standing.
		o.Stage = p.Policy.Name
	}
	return e, o
}

// finish records a plan whose action was done before, making no claim:
// a DELETE whose answer was lost was carried out (fired), or a manager's
// deactivation is missing, which is all it does (deactivated: the sweep
// that acted reported the action).
func (s *Sweeper) finish(ctx context.Context, r *sweepRun, rec record.Record, p *decide.Plan, e report.Entry) (report.Entry, bool) {
	e.Effects = []string{p.Policy.Action.Type + " succeeded before; nothing left to do"}
	o := record.Outcome{Entry: s.succeeded(e, p), Done: true}
	if p.Step == decide.StepConfirmDelete {
		e.Effects = []string{"delete namespace " + p.Target.Name + " (gone after it)"}
		_, o = s.outcomeOf(e, p, nil, r.now, nil)
	}
	e, recorded := s.save(ctx, rec, o)
	if p.Step == decide.StepDeactivate && e.State == report.StateFired {
		e.State = report.StateDeactivated
	}
	return e, recorded
}

// succeeded is the entry of a plan carried out: fired (planned, dry).
func (s *Sweeper) succeeded(e report.Entry, p *decide.Plan) report.Entry {
	e.State, e.Message = s.writer.Done(), p.Reason
	return e
}

// busy is the entry of a subject that changed since it was listed (err).
func busy(e report.Entry, err error) report.Entry {
	e.State, e.Message = report.StateBusy, err.Error()+"; left to the next sweep"
	return e
}

// notReached is the entry of a subject an interrupted sweep stopped at
// before what.
func notReached(e report.Entry, what string) report.Entry {
	return report.Entry{Namespace: e.Namespace, Name: e.Name, Rule: e.Rule, Target: e.Target, State: report.StateDeferred,
		Message: "the sweep was interrupted before " + what}
}

// failedBefore reports whether last is a failure of p's policy, told
// already: a deferral is none, unless failures came before it.
func failedBefore(last *status.LastAction, p *decide.Plan) bool {
	return last != nil && last.Result == report.ResultFailed && (!last.Deferred || last.Failures > 0) && last.Policy == p.Policy.Name
}
