package record

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
)

// StatusLocation is where a manager's Status lives: the status subresource
// of nsman's CRD, or StatusAnnotation under the original one.
type StatusLocation struct {
	Subresource bool
}

// Read decodes the Status of a listed manager where l keeps it. A record
// that does not decode (edited by hand, say) counts as absent.
func (l StatusLocation) Read(m listpage.Listed) status.Status {
	return m.Record(l.Subresource)
}

// Update returns the patch that turns the stored Status from into to, and
// false when they are equal. A resourceVersion makes it conditional.
// deactivate sets spec.deactivated in the same patch, which only the
// annotation can do (else deactivatePatch).
func (l StatusLocation) Update(from, to status.Status, resourceVersion string, deactivate bool) (write.Patch, bool) {
	if write.MustJSON(from) == write.MustJSON(to) && !deactivate {
		return write.Patch{}, false
	}
	metadata := map[string]any{}
	if resourceVersion != "" {
		metadata["resourceVersion"] = resourceVersion
	}
	body := map[string]any{"metadata": metadata}
	if l.Subresource {
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
func (l StatusLocation) settle(claimed, to status.Status, deactivate bool) write.Patch {
	if l.Subresource {
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

// Manager is a manager's record: its Status where statusLocation
// says. A final action deactivates the manager; a deferral is recorded, as
// every final entry is.
type Manager struct {
	Env     Env
	At      StatusLocation
	Obj     *unstructured.Unstructured
	Now     time.Time
	Stored  status.Status
	claimed *status.Status
	Events  Sink
}

func (mr *Manager) Prior() status.Prior {
	last := mr.Stored.LastAction
	return status.Prior{State: mr.Stored.State, Last: last, Failed: last != nil && last.Result == report.ResultFailed && (!last.Deferred || last.Failures > 0), IgnoredHold: mr.Stored.IgnoredHold,
		IgnoredAnnotation: mr.Stored.IgnoredAnnotation, TrafficUnknown: mr.Stored.TrafficUnknown, Stuck: mr.Stored.Stuck.Cause()}
}

func (mr *Manager) Sink() Sink { return mr.Events }

// Unchanged: a manager's decision read its target's uid, hold, expiry and
// (with an IDLE policy: see apply) touched annotation.
func (mr *Manager) Unchanged(listed, now cluster.Namespace) bool {
	return now.UID == listed.UID && !now.Terminating && now.Hold == listed.Hold && now.Expires == listed.Expires && now.Touched == listed.Touched
}

func (mr *Manager) Claim(ctx context.Context, c status.Claim, acting report.Entry, final bool) error {
	claimed := mr.Stored.Clone()
	claimed.Observe(acting, mr.Obj.GetGeneration(), mr.Now)
	if final {
		// A stage leaves the manager standing, with the progress of the
		// policies after it.
		claimed.Checks = nil
	}
	claimed.Claim = &c
	patch, _ := mr.At.Update(mr.Stored, claimed, mr.Obj.GetResourceVersion(), false)
	if err := mr.Env.Writer.PatchManager(ctx, mr.Obj.GetNamespace(), mr.Obj.GetName(), patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("the manager %w", write.ErrChanged)
		}
		return err
	}
	mr.claimed = &claimed
	return nil
}

func (mr *Manager) Write(ctx context.Context, o Outcome) error {
	deactivate := o.Done && !mr.At.Subresource
	if mr.claimed != nil {
		next := mr.claimed.Clone()
		next.Claim = nil
		mr.keep(&next, o)
		if err := write.PatchManagerRecord(ctx, mr.Env.Writer, mr.At.settle(*mr.claimed, next, deactivate), mr.Obj); write.LostClaim(err) {
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
	err := write.RetryOnConflict(func() error {
		if reread {
			now, err := mr.Env.Reads.ManagerNow(ctx, mr.Obj)
			if err != nil || now.Obj.GetUID() != mr.Obj.GetUID() || now.Obj.GetGeneration() != mr.Obj.GetGeneration() {
				return fmt.Errorf("the manager %w", write.ErrChanged)
			} else if st := mr.At.Read(now); st.Claim.Live(mr.Env.Clock(), mr.Env.ClaimTTL) {
				return fmt.Errorf("the manager %w: sweep %s claimed it", write.ErrChanged, st.Claim.Sweep)
			}
			mr.Obj, mr.Stored = now.Obj, mr.At.Read(now)
		}
		next := mr.Stored.Clone()
		mr.keep(&next, o)
		// A stored claim here has expired: one of an older spec is void,
		// one of a manager done is over; one of this spec stays for a later
		// sweep to complete (this one deferred it, or could not claim it).
		if next.Claim != nil && (o.Done || next.Claim.Generation != mr.Obj.GetGeneration()) {
			next.Claim = nil
		}
		patch, changed := mr.At.Update(mr.Stored, next, mr.Obj.GetResourceVersion(), deactivate)
		if !changed {
			return nil
		}
		err := write.PatchManagerRecord(ctx, mr.Env.Writer, patch, mr.Obj)
		if reread = o.Last != nil; apierrors.IsConflict(err) && !reread {
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
func (mr *Manager) keep(st *status.Status, o Outcome) {
	if !o.StuckUnread {
		st.Stuck = status.SameCause(st.Stuck, o.Entry.Stuck)
	}
	if o.StuckOnly {
		return
	}
	generation := mr.Obj.GetGeneration()
	st.Observe(o.Entry, generation, mr.Now)
	st.IgnoredHold, st.IgnoredAnnotation, st.TrafficUnknown = o.Entry.HoldIgnored, o.Entry.AnnotationIgnored, o.Entry.TrafficUnknown()
	st.LastActivity = o.Entry.LastActivity
	if o.Entry.State == report.StateWaiting {
		st.Checks = o.Checks
	}
	if o.Warned != nil {
		st.Warned = o.Warned
	}
	if o.Last != nil {
		st.LastAction = o.Last
	}
	if o.Stage != "" {
		st.Fired = status.AddFired(st.Fired, o.Stage, generation, "", mr.Now)
	}
	st.Asleep = o.sleep(st.Asleep)
}

// deactivate sets spec.deactivated once a final action is done, where the
// status subresource kept it from the record's own patch.
func (mr *Manager) deactivate(ctx context.Context, o Outcome) error {
	if !o.Done || !mr.At.Subresource {
		return nil
	}
	if err := write.PatchManagerRecord(ctx, mr.Env.Writer, deactivatePatch(), mr.Obj); err != nil {
		return fmt.Errorf("deactivate the manager (a later sweep completes it): %w", err)
	}
	return nil
}

// SaveSummary writes a rule's own status, entry e and the summary of its
// namespaces, when they changed; its pairs keep the rest.
func (mr *Manager) SaveSummary(ctx context.Context, e report.Entry, sum status.RuleSummary) error {
	next := mr.Stored.Clone()
	next.Observe(e, mr.Obj.GetGeneration(), mr.Now)
	next.Progress = status.Progress{ObservedGeneration: next.ObservedGeneration, Fired: next.Fired, IgnoredHold: e.HoldIgnored}
	next.Rule = &sum
	patch, changed := mr.At.Update(mr.Stored, next, mr.Obj.GetResourceVersion(), false)
	if !changed {
		return nil
	}
	return write.PatchManagerRecord(ctx, mr.Env.Writer, patch, mr.Obj)
}
