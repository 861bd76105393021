package record

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// Of is the rule's record of ns as listed and the annotation that
// holds it: key, else legacy, else none.
func Of(ns cluster.Namespace, key, legacy string) (raw, at string) {
	if raw, ok := ns.Pairs.Get(key); ok {
		return raw, key
	}
	if raw, ok := ns.Pairs.Get(legacy); ok {
		return raw, legacy
	}
	return "", ""
}

// Pair is a rule's record of one namespace. A deferral is not
// recorded, nor anything after the namespace's DELETE succeeded: the record
// goes with it.
type Pair struct {
	Env  Env
	Rule *policy.Manager
	// Key is PairAnnotation, Legacy the rule's status.LegacyPairAnnotation; At
	// is the one that held the record as listed (none: "").
	Key, Legacy, At string
	// Namespace is the namespace as listed.
	Namespace cluster.Namespace
	// ToldFailure: the rule's status lists a failed action on the
	// namespace, told already.
	ToldFailure bool
	Now         time.Time
	Stored      status.PairStatus
	claimed     *status.PairStatus
	Events      Sink
}

func (pr *Pair) Prior() status.Prior {
	last := pr.Stored.LastAction
	return status.Prior{Last: last, Failed: last != nil && last.Result == report.ResultFailed && (!last.Deferred || last.Failures > 0) || pr.ToldFailure, IgnoredHold: pr.Stored.IgnoredHold, IgnoredAnnotation: pr.Stored.IgnoredAnnotation}
}

func (pr *Pair) Sink() Sink { return pr.Events }

// Unchanged: a pair's decision read its namespace's uid, labels, hold,
// expiry and (with a condition that reads it, IDLE's) touched annotations, and the pair's own
// record; another rule's record or anybody's
// annotation is no reason to wait.
func (pr *Pair) Unchanged(listed, now cluster.Namespace) bool {
	if !pr.Rule.ReadsTouched() {
		listed, now = listed.WithoutTouch(), now.WithoutTouch()
	}
	return now.UID == listed.UID && !now.Terminating && now.Labels == listed.Labels && now.Hold == listed.Hold && now.Expires == listed.Expires && now.Touched == listed.Touched &&
		now.Pairs.Value(pr.Key) == listed.Pairs.Value(pr.Key) && now.Pairs.Value(pr.Legacy) == listed.Pairs.Value(pr.Legacy)
}

func (pr *Pair) Claim(ctx context.Context, c status.Claim, _ report.Entry, final bool) error {
	claimed := pr.Stored
	claimed.Progress = claimed.Progress.Clone()
	claimed.Rule = pr.Rule.Namespace + "/" + pr.Rule.Name
	if final {
		claimed.Checks = nil
	}
	c.Spec = pr.Rule.Arming
	claimed.Claim = &c
	if err := pr.writeAsListed(ctx, claimed); err != nil {
		return err
	}
	pr.claimed = &claimed
	return nil
}

func (pr *Pair) Write(ctx context.Context, o Outcome) error {
	switch {
	case pr.claimed != nil:
		err := pr.replace(ctx, pr.Key, write.MustJSON(*pr.claimed), pr.after(*pr.claimed, o))
		if write.LostClaim(err) {
			return fmt.Errorf("the namespace's record changed since this sweep claimed it: %w", err)
		}
		return err
	case o.Last != nil:
		// A DELETE's, which may have left the namespace terminating: it
		// replaces the record as listed, if it is still that.
		err := pr.replace(ctx, pr.At, pr.Namespace.Pairs.Value(pr.At), pr.after(pr.Stored, o))
		if write.LostClaim(err) {
			return fmt.Errorf("namespace %s's record %w", pr.Namespace.Name, write.ErrChanged)
		}
		return err
	case !NeedsRecord(o.Entry, o.Checks, pr.Stored.Progress) && o.Warned == nil:
		// A pair keeps only a waiting one's progress and holds ignored.
		return nil
	}
	next := pr.Stored
	next.Rule, next.Checks, next.IgnoredHold, next.IgnoredAnnotation = pr.Rule.Namespace+"/"+pr.Rule.Name, o.Checks, o.Entry.HoldIgnored, o.Entry.AnnotationIgnored
	if o.Warned != nil {
		next.Warned = o.Warned
	}
	if next.LastTime().IsZero() && !pr.Now.IsZero() {
		written := pr.Now.UTC()
		next.Written = &written
	}
	return pr.writeAsListed(ctx, next)
}

// after is from with o kept, and no claim.
func (pr *Pair) after(from status.PairStatus, o Outcome) status.PairStatus {
	final := from
	final.Progress = from.Progress.Clone()
	final.Rule, final.Claim, final.ObservedGeneration, final.Spec, final.IgnoredHold = pr.Rule.Namespace+"/"+pr.Rule.Name, nil, pr.Rule.Generation, pr.Rule.Arming, o.Entry.HoldIgnored
	final.IgnoredAnnotation = o.Entry.AnnotationIgnored
	final.LastAction = o.Last
	if o.Stage != "" {
		final.Fired = status.AddFired(final.Fired, o.Stage, pr.Rule.Generation, pr.Rule.Arming, pr.Now)
	}
	final.Asleep = o.sleep(final.Asleep)
	return final
}

// NeedsRecord reports whether a waiting pair has something to record:
// minChecks progress, an OWNER_GONE policy's owner or the time it went, or
// a change in the holds or the annotations it ignores.
func NeedsRecord(e report.Entry, checks map[string]policy.CheckState, stored status.Progress) bool {
	return e.State == report.StateWaiting && (e.HoldIgnored != stored.IgnoredHold || e.AnnotationIgnored != stored.IgnoredAnnotation || !maps.Equal(checks, stored.Checks))
}

// writeAsListed writes st as the pair's record with a merge patch
// conditional on the namespace's resourceVersion (see write.AsListed), removing
// a record listed at the legacy key.
func (pr *Pair) writeAsListed(ctx context.Context, st status.PairStatus) error {
	annotations := map[string]any{pr.Key: write.MustJSON(st)}
	if _, ok := pr.Namespace.Pairs.Get(pr.Legacy); ok {
		annotations[pr.Legacy] = nil // null removes it in a merge patch
	}
	return write.AsListed(ctx, pr.Namespace, pr.Env.Reads.NamespaceNow, pr.Unchanged, func(resourceVersion string) error {
		body := write.MustJSON(map[string]any{"metadata": map[string]any{
			"resourceVersion": resourceVersion,
			"annotations":     annotations,
		}})
		return pr.Env.Writer.PatchNamespace(ctx, pr.Namespace.Name, write.Patch{Body: []byte(body)})
	})
}

// replace replaces the record was, at annotation at, with st at pr.key,
// if it is still was; with no record before (at is ""), st is merged in on
// the namespace's uid (it may have no annotations for a JSON patch to add
// to).
func (pr *Pair) replace(ctx context.Context, at, was string, st status.PairStatus) error {
	// The uid in a merge patch is a precondition: never a namespace recreated.
	patch := write.Patch{Body: []byte(write.MustJSON(map[string]any{"metadata": map[string]any{"uid": pr.Namespace.UID, "annotations": map[string]any{pr.Key: write.MustJSON(st)}}}))}
	switch path := write.AnnotationPointer(pr.Key); {
	case at == pr.Key:
		patch = write.JSONPatch("", write.PatchOp{Op: "test", Path: path, Value: was}, write.PatchOp{Op: "replace", Path: path, Value: write.MustJSON(st)})
	case at != "":
		// A record at the legacy key moves to pr.key.
		old := write.AnnotationPointer(at)
		patch = write.JSONPatch("", write.PatchOp{Op: "test", Path: old, Value: was}, write.PatchOp{Op: "remove", Path: old}, write.PatchOp{Op: "add", Path: path, Value: write.MustJSON(st)})
	}
	return write.Retry(ctx, func(ctx context.Context) error {
		return pr.Env.Writer.PatchNamespace(ctx, pr.Namespace.Name, patch)
	})
}
