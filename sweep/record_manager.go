package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
)

// statusLocation is where a manager's Status lives: the status subresource
// of nsman's CRD, or StatusAnnotation under the original one.
type statusLocation struct {
	subresource bool
}

// read decodes the Status of a listed manager. A record that does not
// decode (edited by hand, say) counts as absent.
func (l statusLocation) read(m cluster.Listed) status.Status {
	raw := []byte(m.Status)
	if !l.subresource {
		raw = []byte(m.Obj.GetAnnotations()[status.StatusAnnotation])
	}
	var st status.Status
	if len(raw) > 0 && json.Unmarshal(raw, &st) != nil {
		return status.Status{}
	}
	return st
}

// update returns the patch that turns the stored Status from into to, and
// false when they are equal. A resourceVersion makes it conditional.
// deactivate sets spec.deactivated in the same patch, which only the
// annotation can do (else deactivatePatch).
func (l statusLocation) update(from, to status.Status, resourceVersion string, deactivate bool) (write.Patch, bool) {
	if write.MustJSON(from) == write.MustJSON(to) && !deactivate {
		return write.Patch{}, false
	}
	metadata := map[string]any{}
	if resourceVersion != "" {
		metadata["resourceVersion"] = resourceVersion
	}
	body := map[string]any{"metadata": metadata}
	if l.subresource {
		diff, err := jsonpatch.CreateMergePatch([]byte(write.MustJSON(from)), []byte(write.MustJSON(to)))
		if err != nil {
			panic(err) // both sides are marshalled Status values
		}
		body["status"] = json.RawMessage(diff)
		return write.Patch{Subresource: "status", Body: []byte(write.MustJSON(body))}, true
	}
	metadata["annotations"] = map[string]any{status.StatusAnnotation: write.MustJSON(to)}
	if deactivate {
		body["spec"] = map[string]any{"deactivated": true}
	}
	return write.Patch{Body: []byte(write.MustJSON(body))}, true
}

// deactivatePatch sets spec.deactivated. It touches no claim, so it needs
// no condition.
func deactivatePatch() write.Patch {
	return write.Patch{Body: []byte(`{"spec":{"deactivated":true}}`)}
}

// settle returns the patch that replaces the claimed Status, which this
// sweep wrote, with to: a JSON patch that tests first that the claim is
// still this sweep's. deactivate is as for update.
func (l statusLocation) settle(claimed, to status.Status, deactivate bool) write.Patch {
	if l.subresource {
		return write.JSONPatch("status", write.PatchOp{Op: "test", Path: "/status/claim/sweep", Value: claimed.Claim.Sweep}, write.PatchOp{Op: "replace", Path: "/status", Value: to})
	}
	// The annotation is compared whole: it is the string the claim wrote.
	path := write.AnnotationPointer(status.StatusAnnotation)
	ops := []write.PatchOp{{Op: "test", Path: path, Value: write.MustJSON(claimed)}, {Op: "replace", Path: path, Value: write.MustJSON(to)}}
	if deactivate {
		ops = append(ops, write.PatchOp{Op: "add", Path: "/spec/deactivated", Value: true})
	}
	return write.JSONPatch("", ops...)
}

// managerRecord is a manager's record: its Status where statusLocation
// says. A final action deactivates the manager; a deferral is recorded, as
// every final entry is.
type managerRecord struct {
	s       *Sweeper
	at      statusLocation
	obj     *unstructured.Unstructured
	now     time.Time
	stored  status.Status
	claimed *status.Status
	events  tell.ManagerEvents
}

// managerRecord is manager l's record, as listed in sweep r.
func (s *Sweeper) managerRecord(r *sweepRun, l cluster.Listed) *managerRecord {
	return &managerRecord{s: s, at: r.status, obj: l.Obj, now: r.now, stored: r.status.read(l),
		events: tell.ManagerEvents{Writer: s.writer, Log: s.log, SweepID: s.cfg.SweepID, Obj: l.Obj, Now: r.now}}
}

func (mr *managerRecord) prior() status.Prior {
	last := mr.stored.LastAction
	return status.Prior{State: mr.stored.State, Last: last, Failed: last != nil && last.Result == report.ResultFailed && (!last.Deferred || last.Failures > 0), IgnoredHold: mr.stored.IgnoredHold,
		IgnoredAnnotation: mr.stored.IgnoredAnnotation, Stuck: mr.stored.Stuck.Cause()}
}

func (mr *managerRecord) sink() tell.Sink { return mr.events }

// unchanged: a manager's decision read its target's uid, hold, expiry and
// (with an IDLE policy: see apply) touched annotation.
func (mr *managerRecord) unchanged(listed, now cluster.Namespace) bool {
	return now.UID == listed.UID && !now.Terminating && now.Hold == listed.Hold && now.Expires == listed.Expires && now.Touched == listed.Touched
}

func (mr *managerRecord) claim(ctx context.Context, c status.Claim, acting report.Entry, final bool) error {
	claimed := mr.stored.Clone()
	claimed.Observe(acting, mr.obj.GetGeneration(), mr.now)
	if final {
		// A stage leaves the manager standing, with the progress of the
		// policies after it.
		claimed.Checks = nil
	}
	claimed.Claim = &c
	patch, _ := mr.at.update(mr.stored, claimed, mr.obj.GetResourceVersion(), false)
	if err := mr.s.writer.PatchManager(ctx, mr.obj.GetNamespace(), mr.obj.GetName(), patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("the manager %w", write.ErrChanged)
		}
		return err
	}
	mr.claimed = &claimed
	return nil
}

func (mr *managerRecord) write(ctx context.Context, o outcome) error {
	deactivate := o.done && !mr.at.subresource
	if mr.claimed != nil {
		next := mr.claimed.Clone()
		next.Claim = nil
		mr.keep(&next, o)
		if err := write.PatchManagerRecord(ctx, mr.s.writer, mr.at.settle(*mr.claimed, next, deactivate), mr.obj); write.LostClaim(err) {
			return fmt.Errorf("the manager changed since this sweep claimed it: %w", err)
		} else if err != nil {
			return err
		}
		return mr.deactivate(ctx, o)
	}
	// Conditional on the version listed; an action's outcome, once done, is
	// written over a change since (another sweep's view of the target,
	// say) unless the spec changed or another sweep's claim is live.
	reread := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if reread {
			now, err := mr.s.reads().ManagerNow(ctx, mr.obj)
			if err != nil || now.Obj.GetUID() != mr.obj.GetUID() || now.Obj.GetGeneration() != mr.obj.GetGeneration() {
				return fmt.Errorf("the manager %w", write.ErrChanged)
			} else if st := mr.at.read(now); st.Claim.Live(mr.s.clock(), mr.s.cfg.ClaimTTL) {
				return fmt.Errorf("the manager %w: sweep %s claimed it", write.ErrChanged, st.Claim.Sweep)
			}
			mr.obj, mr.stored = now.Obj, mr.at.read(now)
		}
		next := mr.stored.Clone()
		mr.keep(&next, o)
		// A stored claim here has expired: one of an older spec is void,
		// one of a manager done is over; one of this spec stays for a later
		// sweep to complete (this one deferred it, or could not claim it).
		if next.Claim != nil && (o.done || next.Claim.Generation != mr.obj.GetGeneration()) {
			next.Claim = nil
		}
		patch, changed := mr.at.update(mr.stored, next, mr.obj.GetResourceVersion(), deactivate)
		if !changed {
			return nil
		}
		err := write.PatchManagerRecord(ctx, mr.s.writer, patch, mr.obj)
		if reread = o.last != nil; apierrors.IsConflict(err) && !reread {
			return fmt.Errorf("the manager %w", write.ErrChanged)
		}
		return err
	})
	if apierrors.IsConflict(err) {
		err = fmt.Errorf("the manager %w", write.ErrChanged)
	}
	if err != nil {
		return err
	}
	return mr.deactivate(ctx, o)
}

// keep sets in st what o says.
func (mr *managerRecord) keep(st *status.Status, o outcome) {
	if !o.stuckUnread {
		st.Stuck = sameCause(st.Stuck, o.entry.Stuck)
	}
	if o.stuckOnly {
		return
	}
	generation := mr.obj.GetGeneration()
	st.Observe(o.entry, generation, mr.now)
	st.IgnoredHold, st.IgnoredAnnotation = o.entry.HoldIgnored, o.entry.AnnotationIgnored
	st.LastActivity = o.entry.LastActivity
	if o.entry.State == report.StateWaiting {
		st.Checks = o.checks
	}
	if o.last != nil {
		st.LastAction = o.last
	}
	if o.stage != "" {
		st.Fired = status.AddFired(st.Fired, o.stage, generation, "", mr.now)
	}
}

// deactivate sets spec.deactivated once a final action is done, where the
// status subresource kept it from the record's own patch.
func (mr *managerRecord) deactivate(ctx context.Context, o outcome) error {
	if !o.done || !mr.at.subresource {
		return nil
	}
	if err := write.PatchManagerRecord(ctx, mr.s.writer, deactivatePatch(), mr.obj); err != nil {
		return fmt.Errorf("deactivate the manager (a later sweep completes it): %w", err)
	}
	return nil
}

// saveSummary writes a rule's own status, entry e and the summary of its
// namespaces, when they changed; its pairs keep the rest.
func (mr *managerRecord) saveSummary(ctx context.Context, e report.Entry, sum status.RuleSummary) error {
	next := mr.stored.Clone()
	next.Observe(e, mr.obj.GetGeneration(), mr.now)
	next.Progress = status.Progress{ObservedGeneration: next.ObservedGeneration, Fired: next.Fired, IgnoredHold: e.HoldIgnored}
	next.Rule = &sum
	patch, changed := mr.at.update(mr.stored, next, mr.obj.GetResourceVersion(), false)
	if !changed {
		return nil
	}
	return write.PatchManagerRecord(ctx, mr.s.writer, patch, mr.obj)
}
