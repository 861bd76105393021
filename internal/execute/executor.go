package execute

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
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

// Executor carries out the decisions of one sweep: it alone writes,
// through Writer, and tells what it did.
type Executor struct {
	// Writer is where every write goes (the API, or nowhere in a dry
	// run); Reads reads the cluster; Notifier (nil: none) sends
	// --notify-url's notifications; Reclaim reads what a DELETE frees.
	Writer   write.Writer
	Reads    cluster.Reader
	Notifier *tell.Notifier
	// Links (nil: none) makes the signed links a SLEEP's notification
	// carries (--links-url).
	Links   *tell.Linker
	Reclaim *reclaim.Reclaim
	Log     *slog.Logger
	// Now is the sweep's time; Clock tells the time now, by which a claim
	// expires.
	Now   time.Time
	Clock func() time.Time
	// Frozen: Now is in a freeze, which ends (with any it runs into) at
	// FrozenUntil.
	Frozen      bool
	FrozenUntil time.Time
	// Stop is done once the sweep is interrupted: no action starts after
	// it, while those under way go on.
	Stop context.Context
	// SweepID, Version, ClaimTTL, MaxActions, Trusted and SkipReclaim are
	// the sweep's: its ID, nsman's version, --claim-ttl, --max-actions,
	// the namespaces it trusts and --reclaim=false.
	SweepID, Version string
	ClaimTTL         time.Duration
	MaxActions       int
	Trusted          []string
	SkipReclaim      bool
	// Places hands out the places of --max-actions.
	Places *FairShare
	// Counts are what the report sums of the sweep's actions.
	Counts Counts
	// Kinds resolves the kinds of workloads SCALE_DOWN and SLEEP select,
	// discovering them once per sweep.
	Kinds *probe.Kinds
	// resleeps is what the sweep's subjects put back to sleep.
	resleeps resleeps
}

// Counts are what a sweep's report says of its actions beyond the entries.
type Counts struct {
	// ReclaimUnknown counts the DELETEs done whose reclaim could not be
	// read; NotifySent and NotifyFailed the notifications of --notify-url.
	ReclaimUnknown, NotifySent, NotifyFailed atomic.Int64
}

// claimMargin is kept between the end of an action's deadline and the expiry
// of its claim, so that no sweep can take over a claim whose action may still
// run.
const claimMargin = 5 * time.Second

// CarryOut carries out decision d for the subject whose record is rec, and
// tells rec's sink what became of it.
func (x *Executor) CarryOut(ctx context.Context, rec record.Record, d decide.Decision) report.Entry {
	p, e := d.Plan, d.Entry
	acted, recorded := false, true
	var deferral error // the receiver, or the tenant's, timed out earlier in this sweep
	if !d.Untouched && p != nil && p.Step == decide.StepAct {
		deferral = actionOf(p.Policy.Action.Type).deferral(x, d.Manager, p)
	}
	switch {
	case d.Untouched:
	case p == nil:
		e, recorded = x.save(ctx, rec, record.Outcome{Entry: e, Checks: d.Checks, StuckOnly: d.StuckOnly, StuckUnread: d.StuckUnread, Warned: d.Warned})
		e = warnOf(ctx, x, d.Manager, d.WarnedTarget, e, recorded)
	case p.Step == decide.StepDeactivate || p.Step == decide.StepConfirmDelete:
		e, recorded = x.finish(ctx, rec, p, e)
	case x.Frozen:
		// Nothing acts in a freeze: due, the subject waits for its end. A
		// claim to complete stays as it is, for the first sweep after.
		e.State, e.Message, e.Due = report.StateWaiting, fmt.Sprintf("%s; frozen until %s (--freeze)", p.Reason, x.FrozenUntil.UTC().Format(time.RFC3339)), decide.TimePtr(x.FrozenUntil)
		if p.Wake {
			e.State = report.StateAsleep // a freeze wakes nothing
		}
		if p.Step != decide.StepCompleteClaim {
			e, recorded = x.save(ctx, rec, record.Outcome{Entry: e, Checks: d.Checks})
		}
	case x.Stop.Err() != nil:
		// Interrupted while this subject was evaluated: no action starts.
		e = NotReached(e, "it acted")
	case deferral != nil:
		// Deferred, backing off, with no claim and no place under
		// --max-actions.
		_, o := x.outcomeOf(e, p, fmt.Errorf("webhook: %w", deferral), x.Now, x.Clock(), rec.Prior().Last)
		e, recorded = x.save(ctx, rec, o)
	case x.MaxActions > 0 && !d.Granted:
		e.State, e.Message = report.StateDeferred, fmt.Sprintf("%s; deferred: --max-actions %d reached (its places go round-robin across namespaces)", p.Reason, x.MaxActions)
		e, recorded = x.save(ctx, rec, record.Outcome{Entry: e})
	default:
		e, acted, recorded = x.act(ctx, rec, d)
	}
	rec.Sink().Tell(ctx, e, rec.Prior(), acted, recorded)
	return e
}

// WantsPlace reports whether carrying out d takes a place under
// --max-actions: an action is due, and nothing else keeps it from starting
// (a freeze, an interrupt, a receiver silent earlier in the sweep).
func (x *Executor) WantsPlace(d decide.Decision) bool {
	p := d.Plan
	switch {
	case x.MaxActions == 0 || d.Untouched || p == nil || p.Step == decide.StepDeactivate || p.Step == decide.StepConfirmDelete || x.Frozen || x.Stop.Err() != nil:
		return false
	case p.Step == decide.StepAct:
		return actionOf(p.Policy.Action.Type).deferral(x, d.Manager, p) == nil
	}
	return true
}

// Offer offers the subject of entry e a place under --max-actions (see
// FairShare), carryOut to carry out its decision once granted one, or
// deferred; the one pushed out, if any, is deferred at once. The places
// are granted, and acted on, once every subject is evaluated (Grant).
func (x *Executor) Offer(e report.Entry, carryOut func(granted bool)) {
	if out := x.Places.offer(&candidate{namespace: e.Target, key: e.Namespace + "/" + e.Name, carryOut: carryOut}); out != nil {
		out.carryOut(false)
	}
}

// Grant carries out the plans placed under --max-actions, each call of
// bounded (which calls fn(0) … fn(n-1) and waits for them) at a time.
func (x *Executor) Grant(bounded func(n int, fn func(i int))) {
	granted := x.Places.granted()
	bounded(len(granted), func(i int) { granted[i].carryOut(true) })
}

// save records a final entry, if the record keeps anything of it, and
// reports whether it did (or had nothing to).
func (x *Executor) save(ctx context.Context, rec record.Record, o record.Outcome) (report.Entry, bool) {
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
func (x *Executor) act(ctx context.Context, rec record.Record, d decide.Decision) (report.Entry, bool, bool) {
	p, e := d.Plan, d.Entry
	// What a fresh DELETE frees is read before it, within bounds of its
	// own: the action's deadline starts after, and an interrupt meanwhile
	// keeps the DELETE from starting.
	freed, unknown := actionOf(p.Policy.Action.Type).before(ctx, x, p)
	if x.Stop.Err() != nil {
		return NotReached(e, "it acted"), false, true
	}
	deadline := time.Now().Add(x.ClaimTTL - claimMargin)
	claimed := (p.Step != decide.StepAct || !p.Policy.Action.Kind().RemovesTarget()) && !p.Resleep
	if claimed {
		if e, ok, recorded := x.claim(ctx, rec, p, e); !ok {
			return e, false, recorded
		}
	}
	actCtx, cancel := context.WithDeadline(ctx, deadline)
	did, err := x.apply(actCtx, d.Manager, rec, p, freed)
	cancel()
	ended := x.Clock()
	if p.Resleep {
		e.PutBack, e.LeftAwake = did.slept, did.left
		var acted, done bool
		if e, acted, done = x.resleeps.entry(e, p, did, err); done {
			return e, acted, true
		}
	}
	if !claimed && write.ChangedSinceListed(err) {
		// The DELETE found the namespace changed: nothing was done.
		return busy(e, err), false, false
	}
	e.Effects, e.Warnings = did.effects, x.warnings(did, d.Manager, p, err)
	if err == nil && (did.through != "" || did.waits != "") {
		return x.stays(ctx, rec, d, e, did)
	}
	switch {
	case err == nil && unknown != nil:
		x.Counts.ReclaimUnknown.Add(1)
		e.Effects = append(e.Effects, "what it freed is not known: "+unknown.Error())
	case err == nil || did.reclaimed != nil && !did.reclaimed.IsZero():
		// A SCALE_DOWN that failed part-way freed what it scaled.
		e.Reclaimed = did.reclaimed
	}
	if !webhook.Deferred(err) {
		defer x.Notify(ctx, d.Manager, p, e.Effects, e.Reclaimed, err, failedBefore(rec.Prior().Last, p))
	}
	if err == nil && p.Policy.Action.Kind().RemovesTarget() && p.Target.Home {
		// The record went with the namespace.
		return x.succeeded(e, p), true, true
	}
	e, o := x.outcomeOf(e, p, err, x.Now, ended, rec.Prior().Last)
	slept(&o, p, err, x.Now)
	e = o.Entry
	if werr := rec.Write(ctx, o); werr != nil && err != nil {
		return decide.Failed(e, fmt.Errorf("%s; recording it failed: %w", e.Message, werr)), true, false
	} else if werr != nil {
		return decide.Failed(e, fmt.Errorf("action done, but recording it failed: %w", werr)), true, false
	}
	return e, true, true
}

// stays records a DELETE via owner that left the namespace standing: the
// owner deleted (fired, planned in a dry run) or waited on, the policy
// not done, so that a later sweep deletes the namespace once the owner is
// gone. It tells no notification: the namespace's deletion will.
func (x *Executor) stays(ctx context.Context, rec record.Record, d decide.Decision, e report.Entry, did applied) (report.Entry, bool, bool) {
	e.State, e.Message, e.TargetStays = x.Writer.Done(), did.through, true
	if did.waits != "" {
		e.State, e.Message = report.StateWaiting, did.waits
	}
	e, recorded := x.save(ctx, rec, record.Outcome{Entry: e, Checks: d.Checks})
	return e, did.through != "", recorded
}

// claim claims the subject of plan p, whose entry is e, for this sweep:
// ok, or the entry it ends with and whether that was recorded.
func (x *Executor) claim(ctx context.Context, rec record.Record, p *decide.Plan, e report.Entry) (_ report.Entry, ok, recorded bool) {
	c := status.Claim{Policy: p.Policy.Name, Action: p.Policy.Action.Type, Sweep: x.SweepID, Wake: p.Wake,
		Expires: x.Clock().Add(x.ClaimTTL).UTC(), Generation: p.Generation, TargetUID: p.Target.UID}
	acting := e
	acting.State, acting.Message = status.StateActing, fmt.Sprintf("sweep %s is acting (%s): %s", x.SweepID, p.Policy.Action.Type, p.Reason)
	if err := rec.Claim(ctx, c, acting, p.Policy.Final); write.ChangedSinceListed(err) {
		return busy(e, err), false, false
	} else if err != nil {
		e, recorded := x.save(ctx, rec, record.Outcome{Entry: decide.Failed(e, fmt.Errorf("claim: %w", err))})
		return e, false, recorded
	}
	return e, true, true
}

// outcomeOf is the entry and the record of plan p's action, done or
// failed with err at the sweep's time now, having ended at ended, prev
// being the last action recorded before. What a failure adds to the
// record is the action's (see action.failed: a WEBHOOK backs off, a DELETE
// without an answer is uncertain).
func (x *Executor) outcomeOf(e report.Entry, p *decide.Plan, err error, now, ended time.Time, prev *status.LastAction) (report.Entry, record.Outcome) {
	last := &status.LastAction{Policy: p.Policy.Name, Action: p.Policy.Action.Type, Result: report.ResultSucceeded, Message: status.Truncate(p.Reason, status.MaxMessage), Time: now.UTC(),
		TargetUID: p.Target.UID}
	if err != nil {
		e = decide.Failed(e, err)
		last.Result, last.Message = report.ResultFailed, status.Truncate(err.Error(), status.MaxMessage)
		last.Reclaimed = e.Reclaimed
		e = actionOf(p.Policy.Action.Type).failed(e, last, prev, err, ended)
		return e, record.Outcome{Entry: e, Last: last}
	}
	e = x.succeeded(e, p)
	last.Reclaimed = e.Reclaimed
	o := record.Outcome{Entry: e, Last: last, Done: p.Policy.Final}
	if !p.Policy.Final && !p.Policy.Action.Kind().KeepsState() {
		// A stage: recorded as fired, the subject left standing.
		o.Stage = p.Policy.Name
	}
	return e, o
}

// slept sets in o the state plan p leaves, its action done or failed
// with err (see action.keep): a target put back to sleep stays as it was
// since it first slept.
func slept(o *record.Outcome, p *decide.Plan, err error, now time.Time) {
	if !p.Resleep {
		actionOf(p.Policy.Action.Type).keep(o, p, err, now)
	}
	o.Entry.Woke = p.Wake
}

// finish records a plan whose action was done before, making no claim:
// a DELETE whose answer was lost was carried out (fired), or a manager's
// deactivation is missing, which is all it does (deactivated: the sweep
// that acted reported the action).
func (x *Executor) finish(ctx context.Context, rec record.Record, p *decide.Plan, e report.Entry) (report.Entry, bool) {
	e.Effects = []string{p.Policy.Action.Type + " succeeded before; nothing left to do"}
	o := record.Outcome{Entry: x.succeeded(e, p), Done: true}
	if p.Step == decide.StepConfirmDelete {
		e.Effects = []string{"delete namespace " + p.Target.Name + " (gone after it)"}
		_, o = x.outcomeOf(e, p, nil, x.Now, x.Now, nil)
	}
	e, recorded := x.save(ctx, rec, o)
	if p.Step == decide.StepDeactivate && e.State == report.StateFired {
		e.State = report.StateDeactivated
	}
	return e, recorded
}

// succeeded is the entry of a plan carried out: fired (planned, dry).
func (x *Executor) succeeded(e report.Entry, p *decide.Plan) report.Entry {
	e.State, e.Message = x.Writer.Done(), p.Reason
	return e
}

// busy is the entry of a subject that changed since it was listed (err).
func busy(e report.Entry, err error) report.Entry {
	e.State, e.Message = report.StateBusy, err.Error()+"; left to the next sweep"
	return e
}

// NotReached is the entry of a subject an interrupted sweep stopped at
// before what.
func NotReached(e report.Entry, what string) report.Entry {
	return report.Entry{Namespace: e.Namespace, Name: e.Name, Rule: e.Rule, Target: e.Target, State: report.StateDeferred,
		Message: "the sweep was interrupted before " + what}
}

// failedBefore reports whether last is a failure of p's policy, told
// already: a deferral is none, unless failures came before it.
func failedBefore(last *status.LastAction, p *decide.Plan) bool {
	return last != nil && last.Result == report.ResultFailed && (!last.Deferred || last.Failures > 0) && last.Policy == p.Policy.Name
}

// notificationKey identifies the firing of p's policy by m that a
// notification tells: firingKey, and for a SLEEP policy, which fires at
// each transition, the transition and the sweep that claimed it (this
// one, or the one whose claim it completes).
func (x *Executor) notificationKey(m policy.Manager, p *decide.Plan) string {
	if !p.Policy.Action.Kind().KeepsState() {
		return firingKey(m, p)
	}
	return fmt.Sprintf("%s/wake=%t/%s", firingKey(m, p), p.Wake, cmp.Or(p.ClaimedBy, x.SweepID))
}

// firingKey identifies the firing of p's policy by m, in the generation the
// plan is for: IdempotencyKey, or a rule's PairIdempotencyKey.
func firingKey(m policy.Manager, p *decide.Plan) string {
	m.Generation = p.Generation
	if m.Rule == nil {
		return status.IdempotencyKey(m, p.Policy.Name)
	}
	return status.PairIdempotencyKey(m, p.Policy.Name, p.Target.UID)
}

// applied is what an action did (would do, dry): its effects, and what
// it freed, for a DELETE or SCALE_DOWN when known.
type applied struct {
	effects   []string
	reclaimed *report.Reclaimed
	// slept counts the workloads a sleep changed (would change, dry);
	// of those a sleep back found awake, left counts those it left to the
	// next sweeps, others those another subject of the sweep put back.
	slept, left, others int
	// warnings are what a SLEEP without selectors left as it was
	// (report.Entry.Warnings).
	warnings []string
	// through: a DELETE via owner deleted the owner, and the namespace
	// stays for a later sweep; waits: it did nothing, waiting on the
	// owner. Each says why; the policy is not done (see Executor.stays).
	through, waits string
}

// apply performs plan p's action through its home (see action) and
// returns what it did (would do, dry). A fresh DELETE is made as listed
// (see write.AsListed), after what it frees (freed, nil when unknown) was
// read.
func (x *Executor) apply(ctx context.Context, m policy.Manager, rec record.Record, p *decide.Plan, freed *report.Reclaimed) (applied, error) {
	if (p.Wake || p.Resleep) && !p.Policy.Action.Kind().KeepsState() {
		return applied{}, fmt.Errorf("policy %q is a %s, not a SLEEP: no wake or sleep by it", p.Policy.Name, p.Policy.Action.Type)
	}
	return actionOf(p.Policy.Action.Type).apply(ctx, x, m, rec, p, freed)
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
	n.Woke = p.Wake
	if !p.Wake && p.Policy.Action.Kind().KeepsState() {
		// A namespace put to sleep offers its people to extend or wake it.
		n.Links = x.Links.For(p.Target.Name, string(p.Target.UID), x.Now)
	}
	to, _ := x.channel(m, p)
	if to == nil {
		return
	}
	if err := to.Send(ctx, n, status.Digest("%s/%s", x.notificationKey(m, p), result)); err != nil {
		x.Counts.NotifyFailed.Add(1)
		x.Log.Error("notification not delivered", "manager", m.Namespace+"/"+m.Name, "namespace", p.Target.Name, "policy", p.Policy.Name, "error", to.Redact(err))
		return
	}
	x.Counts.NotifySent.Add(1)
}

// channel is the notifier of the notifications of plan p of m (nil: none),
// by the target namespace's channel, else m's (tell.Notifier.Route), and
// the warning of a channel that is not the platform's.
func (x *Executor) channel(m policy.Manager, p *decide.Plan) (*tell.Notifier, string) {
	if x.Notifier == nil {
		return nil, ""
	}
	return x.Notifier.Route(p.Target.Listed.NotifyChannel, m.NotifyChannel)
}

// warnings are the entry's warnings of what plan p of m did: the
// action's, and when a notification is to tell it, the channel's that
// names no channel of the platform's (Notifier.Route).
func (x *Executor) warnings(did applied, m policy.Manager, p *decide.Plan, err error) []string {
	if webhook.Deferred(err) || err == nil && (did.through != "" || did.waits != "") {
		return did.warnings // no notification
	}
	if _, unknown := x.channel(m, p); unknown != "" {
		return append(slices.Clip(did.warnings), unknown)
	}
	return did.warnings
}
