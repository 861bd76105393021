package sweep

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// Progress is what nsman keeps of a subject between sweeps to act once: a
// manager's in its Status, a rule's of one namespace in a PairStatus.
type Progress struct {
	// ObservedGeneration is the generation of the manager's (or rule's)
	// spec the record describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Claim is set while a sweep acts.
	Claim *Claim `json:"claim,omitempty"`
	// LastAction is the outcome of the latest action.
	LastAction *LastAction `json:"lastAction,omitempty"`
	// Checks is the progress of PODS_SUCCEED policies with minChecks above
	// 1, by policy name.
	Checks map[string]policy.CheckState `json:"checks,omitempty"`
	// Fired lists the stages (policies that are not final) that fired in
	// this generation, at most one per policy: later sweeps skip them.
	Fired []FiredPolicy `json:"fired,omitempty"`
	// IgnoredHold says why the holds were ignored, while they are: a
	// Warning Event is written when it changes.
	IgnoredHold string `json:"ignoredHold,omitempty"`
	// IgnoredAnnotation says why the target's expiry or touched annotation
	// (policy.ExpiresAnnotation, policy.TouchedAnnotation) is ignored,
	// while it is: a Warning Event is written when it changes.
	IgnoredAnnotation string `json:"ignoredAnnotation,omitempty"`
}

// clone returns a copy that shares nothing a sweep modifies in place.
func (p Progress) clone() Progress {
	p.Fired = slices.Clone(p.Fired)
	p.Checks = maps.Clone(p.Checks)
	if p.LastAction != nil {
		p.LastAction = new(*p.LastAction)
	}
	return p
}

// backingOff is the time before which no sweep delivers policy's WEBHOOK
// again, for m's spec (the record's generation, or spec, the record's
// rule spec, when set), and the failures in a row; zero when it may now. A
// next attempt further ahead than any backoff (written by hand) is
// ignored.
func (p Progress) backingOff(m policy.Manager, policyName, spec string, now time.Time) (time.Time, int) {
	last := p.LastAction
	if last == nil || last.Result != report.ResultFailed || last.Action != policy.ActionWebhook || last.Policy != policyName ||
		last.NextAttempt == nil || !now.Before(*last.NextAttempt) || last.NextAttempt.After(now.Add(maxWebhookBackoff+claimSkew)) ||
		!sameSpec(m, p.ObservedGeneration, spec) {
		return time.Time{}, 0
	}
	return *last.NextAttempt, last.Failures
}

// doneFor reports whether a final policy's action succeeded for m's spec.
func (p Progress) doneFor(m policy.Manager, spec string) bool {
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

// FiredPolicy is a stage that fired: a policy that is not final, which
// fires once per generation and leaves the manager standing.
type FiredPolicy struct {
	Policy     string    `json:"policy"`
	Generation int64     `json:"generation"`
	Time       time.Time `json:"time"`
	// Spec, for a rule's namespace, is the rule's policy.Manager.Arming:
	// pausing and resuming the rule does not fire a stage again.
	Spec string `json:"spec,omitempty"`
}

// firedIn names the stages of fired that fired in generation (or, with
// spec, under that spec).
func firedIn(fired []FiredPolicy, generation int64, spec string) map[string]bool {
	out := map[string]bool{}
	for _, f := range fired {
		if f.Generation == generation || spec != "" && f.Spec == spec {
			out[f.Policy] = true
		}
	}
	return out
}

// addFired records that stage name fired in generation, dropping what
// fired in other generations: the list never outgrows the policies.
func addFired(fired []FiredPolicy, name string, generation int64, spec string, now time.Time) []FiredPolicy {
	out := slices.DeleteFunc(slices.Clone(fired), func(f FiredPolicy) bool {
		return f.Policy == name || f.Generation != generation && (spec == "" || f.Spec != spec)
	})
	return append(out, FiredPolicy{Policy: name, Generation: generation, Time: now.UTC(), Spec: spec})
}

// Claim marks a subject as being acted on by one sweep. Written
// conditional on the version the sweep listed, it is made by one of two
// sweeps; until it expires, every other sweep leaves the subject alone.
type Claim struct {
	Policy string `json:"policy"`
	Action string `json:"action"`
	Sweep  string `json:"sweep"`
	// Expires is the claiming sweep's server time when it claimed, plus
	// --claim-ttl; the action's deadline is --claim-ttl less claimMargin
	// from the same moment, so the claim outlives the action.
	Expires time.Time `json:"expires"`
	// Generation is the manager generation the claim was made for.
	Generation int64 `json:"generation"`
	// TargetUID is the uid of the target namespace when claimed, so that a
	// sweep completing the claim never acts on a namespace recreated since.
	TargetUID types.UID `json:"targetUID,omitempty"`
	// Spec, on a rule's claim, is the rule's policy.Manager.Arming: a claim
	// survives pausing and resuming the rule.
	Spec string `json:"spec,omitempty"`
}

// LastAction records the outcome of the latest action.
type LastAction struct {
	Policy  string    `json:"policy"`
	Action  string    `json:"action"`
	Result  string    `json:"result"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
	// Uncertain: the action failed without an answer from the API server
	// (a reset connection, a timeout, a 5xx), so it may have happened; a
	// DELETE so is confirmed by a sweep that finds the namespace going.
	Uncertain bool `json:"uncertain,omitempty"`
	// Failures counts the WEBHOOK deliveries of this policy that failed or
	// were deferred in a row; NextAttempt is when a sweep may try again
	// (webhookBackoff after the latest): none does before.
	Failures    int        `json:"failures,omitempty"`
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
	// Reclaimed is what a DELETE or SCALE_DOWN freed.
	Reclaimed *report.Reclaimed `json:"reclaimed,omitempty"`
	// TargetUID is the uid of the namespace acted on: a namespace recreated
	// under its name since is another.
	TargetUID types.UID `json:"targetUID,omitempty"`
	// Deferred: the WEBHOOK was not attempted, its receiver having timed
	// out earlier in the sweep. It backs off as a failure does, but is no
	// failure told: the next real one is.
	Deferred bool `json:"deferred,omitempty"`
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

// uncertain reports an error after which an API request may or may not
// have taken effect: no answer, or a server error.
func uncertain(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// record is where a subject's Progress is kept: a managerRecord or a
// pairRecord, made from what the sweep listed. The executor writes through
// it alone. A write that follows no claim of this sweep's is conditional on
// the version listed (errChanged when the subject is not as listed any
// more: it is left to the next sweep), or, for the outcome of a rule's
// DELETE, on the record listed.
type record interface {
	// prior is what the record said as listed.
	prior() prior
	// claim writes claim c with acting, the entry that says so, dropping
	// minChecks progress when final.
	claim(ctx context.Context, c Claim, acting report.Entry, final bool) error
	// write writes what the record keeps of o, if that changed. After a
	// claim, o replaces it, if it is still this sweep's.
	write(ctx context.Context, o outcome) error
	// unchanged reports whether a namespace, read again as now, is as
	// listed for what the decision rests on.
	unchanged(listed, now namespaceInfo) bool
	sink() eventSink
}

// outcome is what a record keeps of one entry of a sweep.
type outcome struct {
	entry report.Entry
	// checks is the minChecks progress of a waiting entry.
	checks map[string]policy.CheckState
	// last is the outcome of an action; stage names its policy when not
	// final; done: a final policy's action succeeded.
	last  *LastAction
	stage string
	done  bool
	// stuckOnly: only what e says of a stuck target is kept; stuckUnread:
	// the record's is kept as it was (see decision).
	stuckOnly, stuckUnread bool
}

// prior is what a record said before this sweep.
type prior struct {
	state report.State
	last  *LastAction
	// failed: the latest action had failed (or the rule's status lists a
	// failure on the namespace).
	failed                         bool
	ignoredHold, ignoredAnnotation string
	// stuck is the cause of the stuck target recorded (Stuck.cause).
	stuck string
}

// errChanged: what the decision rests on changed since the sweep listed
// the subject.
var errChanged = errors.New("changed since this sweep listed it")

// changedSinceListed reports a write refused because the subject is not as
// listed any more.
func changedSinceListed(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || errors.Is(err, errChanged)
}

// lostClaim reports the outcome of a claimed action refused because the
// claim is not this sweep's any more: a JSON patch whose test failed, or
// whose tested path is gone, is answered 422 (Invalid).
func lostClaim(err error) bool { return apierrors.IsInvalid(err) }
