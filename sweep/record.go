package sweep

import (
	"context"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// backingOff is the time before which no sweep delivers policy's WEBHOOK
// again, by p, for m's spec (the record's generation, or spec, the record's
// rule spec, when set), and the failures in a row; zero when it may now. A
// next attempt further ahead than any backoff (written by hand) is
// ignored.
func backingOff(p status.Progress, m policy.Manager, policyName, spec string, now time.Time) (time.Time, int) {
	last := p.LastAction
	if last == nil || last.Result != report.ResultFailed || last.Action != policy.ActionWebhook || last.Policy != policyName ||
		last.NextAttempt == nil || !now.Before(*last.NextAttempt) || last.NextAttempt.After(now.Add(maxWebhookBackoff+status.ClaimSkew)) ||
		!sameSpec(m, p.ObservedGeneration, spec) {
		return time.Time{}, 0
	}
	return *last.NextAttempt, last.Failures
}

// doneFor reports whether, by p, a final policy's action succeeded for
// m's spec.
func doneFor(p status.Progress, m policy.Manager, spec string) bool {
	last := p.LastAction
	if last == nil || last.Result != report.ResultSucceeded || !sameSpec(m, p.ObservedGeneration, spec) {
		return false
	}
	i := policyIndex(m, last.Policy)
	return i >= 0 && m.Policies[i].Final
}

// sameSpec reports whether generation, or spec when set, is m's: a rule's
// records carry its spec (policy.Manager.Arming), which pausing and
// resuming it leaves as it was.
func sameSpec(m policy.Manager, generation int64, spec string) bool {
	return generation == m.Generation || spec != "" && spec == m.Arming
}

// Bounds of the backoff of a WEBHOOK whose delivery failed or was deferred.
const (
	minWebhookBackoff = time.Minute
	maxWebhookBackoff = time.Hour
)

// webhookBackoff is the pause after the n-th failure in a row: 1m, 2m, 4m,
// … up to 1h.
func webhookBackoff(n int) time.Duration {
	if n > 7 { // 1m<<6 already exceeds the cap; avoid shifting further.
		return maxWebhookBackoff
	}
	return min(minWebhookBackoff<<max(n-1, 0), maxWebhookBackoff)
}

// record is where a subject's Progress is kept: a managerRecord or a
// pairRecord, made from what the sweep listed. The executor writes through
// it alone. A write that follows no claim of this sweep's is conditional on
// the version listed (errChanged when the subject is not as listed any
// more: it is left to the next sweep), or, for the outcome of a rule's
// DELETE, on the record listed.
type record interface {
	// prior is what the record said as listed.
	prior() status.Prior
	// claim writes claim c with acting, the entry that says so, dropping
	// minChecks progress when final.
	claim(ctx context.Context, c status.Claim, acting report.Entry, final bool) error
	// write writes what the record keeps of o, if that changed. After a
	// claim, o replaces it, if it is still this sweep's.
	write(ctx context.Context, o outcome) error
	// unchanged reports whether a namespace, read again as now, is as
	// listed for what the decision rests on.
	unchanged(listed, now cluster.Namespace) bool
	sink() tell.Sink
}

// outcome is what a record keeps of one entry of a sweep.
type outcome struct {
	entry report.Entry
	// checks is the minChecks progress of a waiting entry.
	checks map[string]policy.CheckState
	// last is the outcome of an action; stage names its policy when not
	// final; done: a final policy's action succeeded.
	last  *status.LastAction
	stage string
	done  bool
	// stuckOnly: only what e says of a stuck target is kept; stuckUnread:
	// the record's is kept as it was (see decision).
	stuckOnly, stuckUnread bool
}
