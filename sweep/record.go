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
)

// A record is what nsman keeps of one subject between sweeps, so that each
// action is carried out once: for a manager its status (or, under the
// original CRD, an annotation on it), for one namespace of a rule an
// annotation on that namespace. Both hold a Progress; the executor writes
// them only through the record interface, whose two implementations
// (managerRecord, pairRecord) are where managers and rules differ.

// Progress is what a record keeps to act once: the claim of a sweep acting,
// the outcome of the latest action, minChecks progress, the stages fired
// and the holds ignored.
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
	// this generation: later sweeps skip them. At most one per policy.
	Fired []FiredPolicy `json:"fired,omitempty"`
	// IgnoredHold says why the holds were ignored, while they are: a
	// Warning Event is written when it changes.
	IgnoredHold string `json:"ignoredHold,omitempty"`
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

// doneFor reports whether a final policy's action succeeded for this
// generation of m or, with a spec (a rule's record), for a generation of
// the same spec.
func (p Progress) doneFor(m policy.Manager, spec string) bool {
	last := p.LastAction
	if last == nil || last.Result != ResultSucceeded || !sameSpec(m, p.ObservedGeneration, spec) {
		return false
	}
	i := policyIndex(m, last.Policy)
	return i >= 0 && m.Policies[i].Final
}

// sameSpec reports whether generation, or spec when it is set, is m's
// spec: a rule's records carry its spec (policy.Manager.Arming), which
// pausing and resuming the rule leaves as it was.
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

// Claim marks a subject as being acted on by one sweep, so that no other
// sweep acts on it too. It is written conditional on the version the sweep
// listed, so of two sweeps only one can claim; while it has not expired,
// every other sweep leaves the subject alone, whatever its generation.
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
	// (a reset connection, a timeout, a 5xx), so it may have happened. A
	// DELETE recorded so is confirmed by a later sweep that finds the
	// namespace going.
	Uncertain bool `json:"uncertain,omitempty"`
}

// Results in LastAction.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// uncertain reports an error after which an API request may or may not
// have taken effect: no answer, or a server error.
func uncertain(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// record is where a subject's claim and outcomes are kept. A sweep makes
// one per subject it handles, from what it listed; the executor writes
// through it alone. A write that makes or keeps no claim of this sweep's is
// conditional on the version listed: errChanged when the subject is not as
// listed any more, and it is left to the next sweep.
type record interface {
	// prior is what the record said as listed.
	prior() prior
	// claim writes claim c with acting, the entry that says so, dropping
	// minChecks progress when final.
	claim(ctx context.Context, c Claim, acting Entry, final bool) error
	// write writes what the record keeps of o, when that changed, and
	// reports whether it wrote. After a claim, o replaces it, and the write
	// fails, writing nothing, when the claim is not this sweep's any more.
	write(ctx context.Context, o outcome) (bool, error)
	// livesIn reports whether the record goes with namespace t when t is
	// deleted: nothing is written after.
	livesIn(t target) bool
	// unchanged reports whether a namespace the decision read, now read
	// again, is still as listed for what the decision rests on.
	unchanged(listed, now namespaceInfo) bool
	sink() eventSink
}

// outcome is what a record keeps of one entry of a sweep.
type outcome struct {
	entry Entry
	// checks is the minChecks progress of a waiting entry.
	checks map[string]policy.CheckState
	// last is the outcome of the action carried out, if one was; stage
	// names it when its policy is not final, and done says a final
	// policy's action succeeded: the manager is deactivated.
	last  *LastAction
	stage string
	done  bool
}

// prior is what a record said before this sweep: for the sink to tell a
// change, and for a failure to be told once.
type prior struct {
	state State
	last  *LastAction
	// failed: the latest action had failed (for a rule's namespace, or
	// the rule's status lists a failure there).
	failed      bool
	ignoredHold string
}

// errChanged: what the decision rests on changed since the sweep listed
// the subject; it is left to the next sweep.
var errChanged = errors.New("changed since this sweep listed it")

// changedSinceListed reports a write refused because the subject is not as
// listed any more.
func changedSinceListed(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || errors.Is(err, errChanged)
}

// lostClaim reports a settle refused because the claim it tests is no longer
// this sweep's: a JSON patch whose test failed, or whose tested path is gone,
// is answered 422 (Invalid).
func lostClaim(err error) bool {
	return apierrors.IsInvalid(err)
}
