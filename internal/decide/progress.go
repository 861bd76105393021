package decide

import (
	"time"

	"github.com/nsman/nsman/internal/status"
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
		last.NextAttempt == nil || !now.Before(*last.NextAttempt) || last.NextAttempt.After(now.Add(MaxWebhookBackoff+status.ClaimSkew)) ||
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
	MaxWebhookBackoff = time.Hour
)

// WebhookBackoff is the pause after the n-th failure in a row: 1m, 2m, 4m,
// … up to 1h.
func WebhookBackoff(n int) time.Duration {
	if n > 7 { // 1m<<6 already exceeds the cap; avoid shifting further.
		return MaxWebhookBackoff
	}
	return min(minWebhookBackoff<<max(n-1, 0), MaxWebhookBackoff)
}
