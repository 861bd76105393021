package sweep

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/nsman/nsman/policy"
)

// The executor is the one place that writes to managers and carries out
// actions: execute for a decision with a plan, record for one without. It
// owns the action cap, claims, records and Events; dry run is its writer,
// which sends nothing.
//
// Writes to a manager, and what keeps each from clobbering another sweep's
// claim:
//   - record (a final entry) and the claim carry the resourceVersion this
//     sweep listed: of two sweeps that listed one version, one writes.
//   - settle (the outcome of an action) is a JSON patch that tests first
//     that the claim is still this sweep's.
//   - deactivatePatch touches spec alone, never the status.

// claimMargin is kept between the end of an action's deadline and the expiry
// of its claim, so that no sweep can take over a claim whose action may still
// run.
const claimMargin = 5 * time.Second

// recordTimeout bounds a write of a manager's record. It is made even when
// the sweep was interrupted, so that a claim is released and a failure seen.
const recordTimeout = 5 * time.Second

// execute carries out d's plan: within the action cap, claimed, acted on,
// recorded and deactivated. In a dry run the writer sends nothing and the
// entry is the plan.
func (s *Sweeper) execute(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Status, d decision) Entry {
	p, m, e := d.plan, d.manager, d.entry
	switch p.step {
	case stepDeactivate:
		e.Effects = []string{p.policy.Action.Type + " succeeded before; nothing left to do"}
		return s.completeWithoutAction(ctx, r, obj, stored, p, e)
	case stepConfirmDelete:
		e.Effects = []string{"delete namespace " + p.target.name + " (already gone)"}
		return s.completeWithoutAction(ctx, r, obj, stored, p, e)
	}

	if r.stop.Err() != nil {
		// Interrupted while this manager was evaluated: no action starts.
		return notReached(obj)
	}
	if max := s.cfg.MaxActions; max > 0 && r.actions.Add(1) > int64(max) {
		e.State, e.Message = StateDeferred, fmt.Sprintf("%s; deferred: --max-actions %d reached", p.reason, max)
		return s.record(ctx, r, obj, stored, e, nil)
	}

	// The claim expires ClaimTTL after it is made, in the API server's
	// time, and the action's deadline is claimMargin earlier, counted from
	// the same moment: however late in a sweep a manager is reached, no
	// other sweep takes the claim over while the action may run.
	claimed := stored.clone()
	if !selfDelete(p) {
		// A manager that deletes its own namespace is claimed with the
		// claim alone: the manager goes with the namespace, and a status
		// saying it acts would only make the claim larger.
		claimed.observe(Entry{State: StateActing, Target: p.target.name, Message: fmt.Sprintf("sweep %s is acting (%s): %s", s.cfg.SweepID, p.policy.Action.Type, p.reason)}, m.Generation, r.now)
		if p.policy.Final {
			// A stage leaves the manager standing, with the progress of
			// the policies after it.
			claimed.Checks = nil
		}
	}
	deadline := time.Now().Add(s.cfg.ClaimTTL - claimMargin)
	claimed.Claim = &Claim{Policy: p.policy.Name, Action: p.policy.Action.Type, Sweep: s.cfg.SweepID,
		Expires: s.clock().Add(s.cfg.ClaimTTL).UTC(), Generation: m.Generation, TargetUID: p.target.uid}
	patch, _ := r.store.update(stored, claimed, obj.GetResourceVersion(), false)
	if err := s.writer.patchManager(ctx, m.Namespace, m.Name, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			e.State, e.Message = StateBusy, "changed by someone else since this sweep listed it; left to the next sweep"
			return e
		}
		return s.record(ctx, r, obj, stored, failed(e, fmt.Errorf("claim: %w", err)), nil)
	}

	actCtx, cancel := context.WithDeadline(ctx, deadline)
	effects, err := s.apply(actCtx, m, p)
	cancel()
	e.Effects = effects
	defer s.notifyOutcome(ctx, r, m, p, effects, err, failedBefore(stored.LastAction, p))

	// A manager that deleted its own namespace goes with it, its Events
	// too: its outcome is in the logs, the report and the metrics, and the
	// claim, until the manager is gone, keeps other sweeps away.
	if err == nil && selfDelete(p) {
		return s.succeeded(e, p)
	}

	final := claimed.clone()
	final.Claim = nil
	if err != nil {
		e = failed(e, err)
		final.observe(e, m.Generation, r.now)
		final.LastAction = &LastAction{Policy: p.policy.Name, Action: p.policy.Action.Type, Result: ResultFailed, Message: truncate(err.Error(), maxMessage), Time: r.now.UTC(),
			Uncertain: p.policy.Action.Type == policy.ActionDelete && uncertain(err)}
		if werr := s.write(ctx, r.store.settle(claimed, final, false), m.Namespace, m.Name); werr != nil {
			return failed(e, fmt.Errorf("%w; recording the failure failed too: %w", err, werr))
		}
		s.announce(ctx, r, obj, e)
		return e
	}
	done := s.succeeded(e, p)
	final.observe(Entry{State: StateFired, Target: p.target.name, Message: p.reason}, m.Generation, r.now)
	final.IgnoredHold = e.HoldIgnored
	final.LastAction = &LastAction{Policy: p.policy.Name, Action: p.policy.Action.Type, Result: ResultSucceeded, Message: truncate(p.reason, maxMessage), Time: r.now.UTC()}
	if !p.policy.Final {
		// A stage: recorded as fired, the manager left standing.
		final.Fired = addFired(final.Fired, p.policy.Name, m.Generation, "", r.now)
	}
	if err := s.write(ctx, r.store.settle(claimed, final, !r.store.inStatus && p.policy.Final), m.Namespace, m.Name); err != nil {
		if lostClaim(err) {
			err = fmt.Errorf("the manager changed since this sweep claimed it: %w", err)
		}
		return failed(done, fmt.Errorf("action done, but recording it failed: %w", err))
	}
	s.announce(ctx, r, obj, done)
	s.warnIgnoredHold(ctx, r, obj, stored, done)
	if r.store.inStatus && p.policy.Final {
		if err := s.write(ctx, deactivatePatch(), m.Namespace, m.Name); err != nil {
			return failed(done, fmt.Errorf("action done, but deactivating the manager failed (a later sweep completes it): %w", err))
		}
	}
	return done
}

// selfDelete reports a plan to DELETE the namespace the manager lives in.
func selfDelete(p *plan) bool { return p.policy.Action.Type == policy.ActionDelete && p.target.home }

// succeeded is the entry of a plan carried out.
func (s *Sweeper) succeeded(e Entry, p *plan) Entry {
	e.State, e.Message = StateFired, p.reason
	if s.cfg.DryRun {
		e.State = StatePlanned
	}
	return e
}

// completeWithoutAction records a plan whose action was done before, and
// deactivates the manager. The record carries the resourceVersion listed:
// no claim is made, so none can be clobbered.
func (s *Sweeper) completeWithoutAction(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Status, p *plan, e Entry) Entry {
	e = s.succeeded(e, p)
	final := stored.clone()
	final.observe(Entry{State: StateFired, Target: p.target.name, Message: p.reason}, obj.GetGeneration(), r.now)
	final.Claim = nil
	if p.step == stepConfirmDelete {
		final.LastAction = &LastAction{Policy: p.policy.Name, Action: p.policy.Action.Type, Result: ResultSucceeded, Message: truncate(p.reason, maxMessage), Time: r.now.UTC()}
	}
	patch, _ := r.store.update(stored, final, obj.GetResourceVersion(), !r.store.inStatus)
	if err := s.write(ctx, patch, obj.GetNamespace(), obj.GetName()); err != nil {
		if apierrors.IsConflict(err) {
			e.State, e.Message = StateBusy, "changed by someone else since this sweep listed it; left to the next sweep"
			return e
		}
		return failed(e, fmt.Errorf("record the outcome on the manager: %w", err))
	}
	if r.store.inStatus {
		if err := s.write(ctx, deactivatePatch(), obj.GetNamespace(), obj.GetName()); err != nil {
			return failed(e, fmt.Errorf("deactivate the manager: %w", err))
		}
	}
	if stored.State != StateFired {
		s.announce(ctx, r, obj, e)
	}
	return e
}

// record writes the status that entry e, a final one, describes, when it
// differs from the stored one, and the Event for a changed state. The write
// carries the resourceVersion listed: a manager changed since (claimed by
// another sweep, say) is left to the next sweep.
func (s *Sweeper) record(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Status, e Entry, checks map[string]policy.CheckState) Entry {
	next := stored.clone()
	next.observe(e, obj.GetGeneration(), r.now)
	next.IgnoredHold = e.HoldIgnored
	// A claim that reaches here has expired (a live one leaves the manager
	// untouched). One made for an older spec is void; one of this spec
	// stays for a later sweep to complete (this one deferred it, or could
	// not claim it).
	if next.Claim != nil && next.Claim.Generation != obj.GetGeneration() {
		next.Claim = nil
	}
	if e.State == StateWaiting {
		next.Checks = checks
	}
	patch, changed := r.store.update(stored, next, obj.GetResourceVersion(), false)
	if !changed {
		return e
	}
	if err := s.write(ctx, patch, obj.GetNamespace(), obj.GetName()); err != nil {
		if apierrors.IsConflict(err) {
			e.State, e.Message = StateBusy, "changed by someone else since this sweep listed it; left to the next sweep"
			return e
		}
		return failed(e, fmt.Errorf("record the outcome on the manager: %w", err))
	}
	if e.State != stored.State {
		s.announce(ctx, r, obj, e)
	}
	s.warnIgnoredHold(ctx, r, obj, stored, e)
	return e
}

// warnIgnoredHold writes a Warning Event when holds are ignored that were
// not before (or for another reason).
func (s *Sweeper) warnIgnoredHold(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Status, e Entry) {
	if e.HoldIgnored != "" && e.HoldIgnored != stored.IgnoredHold {
		s.emit(ctx, r, obj, corev1.EventTypeWarning, holdIgnored, "Evaluate", e.HoldIgnored)
	}
}

// write applies a patch to a manager, retrying transient failures, even
// after the sweep was interrupted. A manager that is gone (deleted along
// with its namespace) needs nothing.
func (s *Sweeper) write(ctx context.Context, patch managerPatch, namespace, name string) error {
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.writer.patchManager(ctx, namespace, name, patch)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// retry makes a record's write, retrying transient failures, within
// recordTimeout even after the sweep was interrupted.
func (s *Sweeper) retry(ctx context.Context, write func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return retry.OnError(wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2}, transient, func() error {
		return write(ctx)
	})
}

// transient reports an error that a retry may not meet again.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// lostClaim reports a settle refused because the claim it tests is no longer
// this sweep's: a JSON patch whose test failed, or whose tested path is gone,
// is answered 422 (Invalid).
func lostClaim(err error) bool {
	return apierrors.IsInvalid(err)
}

// failedBefore reports whether last, a stored outcome, is a failure of
// plan p's policy: that failure was told already.
func failedBefore(last *LastAction, p *plan) bool {
	return last != nil && last.Result == ResultFailed && last.Policy == p.policy.Name
}
