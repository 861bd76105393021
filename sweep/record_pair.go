package sweep

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// recordOf is the rule's record of ns as listed and the annotation that
// holds it: key, else legacy, else none.
func recordOf(ns cluster.Namespace, key, legacy string) (raw, at string) {
	if raw, ok := ns.Pairs[key]; ok {
		return raw, key
	}
	if raw, ok := ns.Pairs[legacy]; ok {
		return raw, legacy
	}
	return "", ""
}

// pairRecord is a rule's record of one namespace. A deferral is not
// recorded, nor anything after the namespace's DELETE succeeded: the record
// goes with it.
type pairRecord struct {
	s    *Sweeper
	rule *policy.Manager
	// key is PairAnnotation, legacy the rule's legacyPairAnnotation; at
	// is the one that held the record as listed (none: "").
	key, legacy, at string
	// ns is the namespace as listed.
	ns cluster.Namespace
	// toldFailure: the rule's status lists a failed action on the
	// namespace, told already.
	toldFailure bool
	now         time.Time
	stored      status.PairStatus
	claimed     *status.PairStatus
	events      *tell.RuleTally
}

func (pr *pairRecord) prior() status.Prior {
	last := pr.stored.LastAction
	return status.Prior{Last: last, Failed: last != nil && last.Result == report.ResultFailed && (!last.Deferred || last.Failures > 0) || pr.toldFailure, IgnoredHold: pr.stored.IgnoredHold, IgnoredAnnotation: pr.stored.IgnoredAnnotation}
}

func (pr *pairRecord) sink() tell.Sink { return pr.events }

// unchanged: a pair's decision read its namespace's uid, labels, hold,
// expiry and (with an IDLE policy) touched annotations, and the pair's own
// record; another rule's record or anybody's
// annotation is no reason to wait.
func (pr *pairRecord) unchanged(listed, now cluster.Namespace) bool {
	if !idles(*pr.rule) {
		listed, now = withoutTouch(listed), withoutTouch(now)
	}
	return now.UID == listed.UID && !now.Terminating && now.Labels == listed.Labels && now.Hold == listed.Hold && now.Expires == listed.Expires && now.Touched == listed.Touched &&
		now.Pairs[pr.key] == listed.Pairs[pr.key] && now.Pairs[pr.legacy] == listed.Pairs[pr.legacy]
}

func (pr *pairRecord) claim(ctx context.Context, c status.Claim, _ report.Entry, final bool) error {
	claimed := pr.stored
	claimed.Progress = claimed.Progress.Clone()
	claimed.Rule = pr.rule.Namespace + "/" + pr.rule.Name
	if final {
		claimed.Checks = nil
	}
	c.Spec = pr.rule.Arming
	claimed.Claim = &c
	if err := pr.writeAsListed(ctx, claimed); err != nil {
		return err
	}
	pr.claimed = &claimed
	return nil
}

func (pr *pairRecord) write(ctx context.Context, o outcome) error {
	switch {
	case pr.claimed != nil:
		err := pr.replace(ctx, pr.key, write.MustJSON(*pr.claimed), pr.after(*pr.claimed, o))
		if write.LostClaim(err) {
			return fmt.Errorf("the namespace's record changed since this sweep claimed it: %w", err)
		}
		return err
	case o.last != nil:
		// A DELETE's, which may have left the namespace terminating: it
		// replaces the record as listed, if it is still that.
		err := pr.replace(ctx, pr.at, pr.ns.Pairs[pr.at], pr.after(pr.stored, o))
		if write.LostClaim(err) {
			return fmt.Errorf("namespace %s's record %w", pr.ns.Name, write.ErrChanged)
		}
		return err
	case !needsRecord(o.entry, o.checks, pr.stored.Progress):
		// A pair keeps only a waiting one's progress and holds ignored.
		return nil
	}
	next := pr.stored
	next.Rule, next.Checks, next.IgnoredHold, next.IgnoredAnnotation = pr.rule.Namespace+"/"+pr.rule.Name, o.checks, o.entry.HoldIgnored, o.entry.AnnotationIgnored
	if next.LastTime().IsZero() {
		next.Written = timePtr(pr.now)
	}
	return pr.writeAsListed(ctx, next)
}

// after is from with o kept, and no claim.
func (pr *pairRecord) after(from status.PairStatus, o outcome) status.PairStatus {
	final := from
	final.Progress = from.Progress.Clone()
	final.Rule, final.Claim, final.ObservedGeneration, final.Spec, final.IgnoredHold = pr.rule.Namespace+"/"+pr.rule.Name, nil, pr.rule.Generation, pr.rule.Arming, o.entry.HoldIgnored
	final.IgnoredAnnotation = o.entry.AnnotationIgnored
	final.LastAction = o.last
	if o.stage != "" {
		final.Fired = status.AddFired(final.Fired, o.stage, pr.rule.Generation, pr.rule.Arming, pr.now)
	}
	return final
}

// needsRecord reports whether a waiting pair has something to record:
// minChecks progress, or a change in the holds or the annotations it ignores.
func needsRecord(e report.Entry, checks map[string]policy.CheckState, stored status.Progress) bool {
	return e.State == report.StateWaiting && (e.HoldIgnored != stored.IgnoredHold || e.AnnotationIgnored != stored.IgnoredAnnotation || !maps.Equal(checks, stored.Checks))
}

// writeAsListed writes st as the pair's record with a merge patch
// conditional on the namespace's resourceVersion (see asListed), removing
// a record listed at the legacy key.
func (pr *pairRecord) writeAsListed(ctx context.Context, st status.PairStatus) error {
	annotations := map[string]any{pr.key: write.MustJSON(st)}
	if _, ok := pr.ns.Pairs[pr.legacy]; ok {
		annotations[pr.legacy] = nil // null removes it in a merge patch
	}
	return write.AsListed(ctx, pr.ns, pr.s.reads().NamespaceNow, pr.unchanged, func(resourceVersion string) error {
		body := write.MustJSON(map[string]any{"metadata": map[string]any{
			"resourceVersion": resourceVersion,
			"annotations":     annotations,
		}})
		return pr.s.writer.PatchNamespace(ctx, pr.ns.Name, write.Patch{Body: []byte(body)})
	})
}

// replace replaces the record was, at annotation at, with st at pr.key,
// if it is still was; with no record before (at is ""), st is merged in on
// the namespace's uid (it may have no annotations for a JSON patch to add
// to).
func (pr *pairRecord) replace(ctx context.Context, at, was string, st status.PairStatus) error {
	// The uid in a merge patch is a precondition: never a namespace recreated.
	patch := write.Patch{Body: []byte(write.MustJSON(map[string]any{"metadata": map[string]any{"uid": pr.ns.UID, "annotations": map[string]any{pr.key: write.MustJSON(st)}}}))}
	switch path := write.AnnotationPointer(pr.key); {
	case at == pr.key:
		patch = write.JSONPatch("", write.PatchOp{Op: "test", Path: path, Value: was}, write.PatchOp{Op: "replace", Path: path, Value: write.MustJSON(st)})
	case at != "":
		// A record at the legacy key moves to pr.key.
		old := write.AnnotationPointer(at)
		patch = write.JSONPatch("", write.PatchOp{Op: "test", Path: old, Value: was}, write.PatchOp{Op: "remove", Path: old}, write.PatchOp{Op: "add", Path: path, Value: write.MustJSON(st)})
	}
	return write.Retry(ctx, func(ctx context.Context) error {
		return pr.s.writer.PatchNamespace(ctx, pr.ns.Name, patch)
	})
}
