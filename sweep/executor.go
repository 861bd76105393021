package sweep

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/nsman/nsman/policy"
)

// claimMargin is kept between the end of an action's deadline and the expiry
// of its claim, so that no sweep can take over a claim whose action may still
// run.
const claimMargin = 5 * time.Second

// record is a manager's Status as stored and as it should become; handle
// fills it, and writes the difference once at the end.
type record struct {
	stored, next Status
	// deactivated: spec.deactivated must be set with the record.
	deactivate bool
	// announced: the event for this outcome is already written.
	announced bool
}

// fire applies policy i of m: within the action cap, claimed, acted on, and
// deactivated on success; the outcome goes into rec. In a dry run the writer
// sends nothing and the entry is the plan.
func (s *Sweeper) fire(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, m policy.Manager, i int, reason string, t target, rec *record) Entry {
	p := m.Policies[i]
	e := Entry{Namespace: m.Namespace, Name: m.Name, Target: t.name, Policy: p.Name, Action: p.Action.Type}

	if max := s.cfg.MaxActions; max > 0 && r.actions.Add(1) > int64(max) {
		e.State, e.Message = StateDeferred, fmt.Sprintf("%s; deferred: --max-actions %d reached", reason, max)
		return e
	}

	// The claim carries the record the manager has once the action has
	// succeeded, so that success costs one write more, the deactivation,
	// and not two. While the manager is active, its live claim says that the
	// action is under way; a failure replaces the record.
	claimed := rec.stored.clone()
	claimed.observe(Entry{State: StateFired, Target: t.name, Message: reason}, m.Generation, r.now)
	claimed.Checks = nil
	claimed.LastAction = &LastAction{Policy: p.Name, Action: p.Action.Type, Result: ResultSucceeded, Message: truncate(reason, maxMessage), Time: r.now.UTC()}
	claimed.Claim = &Claim{Policy: p.Name, Action: p.Action.Type, Sweep: s.cfg.SweepID, Expires: r.now.Add(s.cfg.ClaimTTL), Generation: m.Generation, TargetUID: t.uid}
	// The resourceVersion makes the claim conditional: of two sweeps that
	// listed the same version, only one claims.
	patch, _ := r.store.update(rec.stored, claimed, obj.GetResourceVersion(), false)
	if err := s.writer.patchManager(ctx, m.Namespace, m.Name, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			e.State, e.Message = StateBusy, "changed by someone else since this sweep listed it; left to the next sweep"
			return e
		}
		return failed(e, fmt.Errorf("claim: %w", err))
	}
	rec.stored = claimed

	// A namespace being deleted takes its events with it, and refuses new
	// ones: announce the deletion of the manager's own namespace before it.
	if p.Action.Type == policy.ActionDelete && t.name == m.Namespace {
		s.announce(ctx, r, obj, Entry{State: StateFired, Action: p.Action.Type, Message: reason + "; deleting namespace " + t.name})
		rec.announced = true
	}

	actCtx, cancel := context.WithTimeout(ctx, s.cfg.ClaimTTL-claimMargin)
	effects, err := s.apply(actCtx, m, p, t)
	cancel()
	e.Effects = effects

	rec.next = claimed.clone()
	if err != nil {
		rec.next.Claim = nil
		rec.next.LastAction.Result, rec.next.LastAction.Message = ResultFailed, truncate(err.Error(), maxMessage)
		rec.announced = false // the failure is news
		return failed(e, err)
	}
	if r.store.inStatus {
		// The spec is not part of the status subresource: a patch of its
		// own completes the claim, which stays on the deactivated manager
		// as the mark of the sweep that acted.
		if err := s.patchRetrying(ctx, m.Namespace, m.Name, deactivatePatch()); err != nil {
			rec.next.Claim = nil
			return failed(e, fmt.Errorf("action done, but deactivating the manager failed (a later sweep completes it): %w", err))
		}
	} else {
		// The annotation store sets spec.deactivated with the record, which
		// is written anyway: the claim goes with it.
		rec.next.Claim = nil
		rec.deactivate = true
	}
	e.State, e.Message = StateFired, reason
	if s.cfg.DryRun {
		e.State = StatePlanned
	}
	return e
}

// patchRetrying applies an unconditional patch, retrying transient failures.
// A manager that is gone (deleted along with its namespace) needs nothing.
func (s *Sweeper) patchRetrying(ctx context.Context, namespace, name string, patch managerPatch) error {
	err := retry.OnError(wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2}, retryable, func() error {
		return s.writer.patchManager(ctx, namespace, name, patch)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func retryable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err)
}
