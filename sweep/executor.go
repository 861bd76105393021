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

// fire applies policy i of m: within the action cap, claimed, acted on, and
// finished by deactivating the manager and recording the outcome. In a dry
// run the writer sends nothing and the entry is the plan.
func (s *Sweeper) fire(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, m policy.Manager, i int, reason string, t target) Entry {
	p := m.Policies[i]
	e := Entry{Namespace: m.Namespace, Name: m.Name, Target: t.name, Policy: p.Name, Action: p.Action.Type}

	if max := s.cfg.MaxActions; max > 0 && r.actions.Add(1) > int64(max) {
		e.State, e.Message = StateDeferred, fmt.Sprintf("%s; deferred: --max-actions %d reached", reason, max)
		return e
	}

	claim := Claim{Policy: p.Name, Action: p.Action.Type, Sweep: s.cfg.SweepID, Expires: r.now.Add(s.cfg.ClaimTTL), Generation: m.Generation, TargetUID: t.uid}
	// The resourceVersion makes the claim conditional: of two sweeps that
	// listed the same version, only one claims.
	if err := s.writer.patchManager(ctx, m.Namespace, m.Name, r.store.claimPatch(obj.GetResourceVersion(), claim)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			e.State, e.Message = StateBusy, "changed by someone else since this sweep listed it; left to the next sweep"
			s.log.Debug("claim lost", "manager", m.Namespace+"/"+m.Name, "error", err.Error())
			return e
		}
		return failed(e, fmt.Errorf("claim: %w", err))
	}

	actCtx, cancel := context.WithTimeout(ctx, s.cfg.ClaimTTL-claimMargin)
	effects, err := s.apply(actCtx, m, p, t)
	cancel()
	e.Effects = effects

	last := LastAction{Policy: p.Name, Action: p.Action.Type, Result: ResultSucceeded, Message: reason, Time: r.now.UTC()}
	if err != nil {
		last.Result, last.Message = ResultFailed, err.Error()
	}
	if ferr := s.finish(ctx, m, r.store.finishPatches(last, err == nil)); ferr != nil {
		if err == nil {
			err = fmt.Errorf("action done, but recording it failed (a later sweep completes it): %w", ferr)
		}
	}

	switch {
	case err != nil:
		return failed(e, err)
	case s.cfg.DryRun:
		e.State, e.Message = StatePlanned, reason
	default:
		e.State, e.Message = StateFired, reason
	}
	return e
}

// finish records the outcome on the manager. The patches are unconditional,
// so they need no conflict retry; transient failures are retried. A manager
// that is gone (deleted along with its namespace) needs no record.
func (s *Sweeper) finish(ctx context.Context, m policy.Manager, patches []managerPatch) error {
	for _, patch := range patches {
		err := retry.OnError(wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2}, retryable, func() error {
			return s.writer.patchManager(ctx, m.Namespace, m.Name, patch)
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func retryable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err)
}
