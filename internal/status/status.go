package status

import (
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Status is what nsman records on a manager: its Progress, and what the
// last sweep found, written only when it changes.
type Status struct {
	Progress
	// State is the State of the manager's report entry.
	State report.State `json:"state,omitempty"`
	// Target is the namespace the manager acts on.
	Target string `json:"target,omitempty"`
	// NextDue is when a waiting manager is next due, when time alone decides.
	NextDue *metav1.Time `json:"nextDue,omitempty"`
	// LastActivity is, for IDLE, the newest activity in the target the
	// last sweep counted.
	LastActivity *report.LastActivity `json:"lastActivity,omitempty"`
	// Message says why, in a sentence.
	Message string `json:"message,omitempty"`
	// Conditions holds ConditionFired.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Rule summarizes, for a rule, the namespaces it matches.
	Rule *RuleSummary `json:"rule,omitempty"`
	// Stuck says why the target, which the manager deleted or aims at, is
	// stuck in Terminating, as first seen with this cause.
	Stuck *report.Stuck `json:"stuck,omitempty"`
}

// Clone returns a copy that shares nothing the sweep modifies in place.
func (st Status) Clone() Status {
	st.Progress = st.Progress.Clone()
	st.Conditions = slices.Clone(st.Conditions)
	return st
}

// ConditionFired is True once the manager's action succeeded; while False,
// its reason says why not yet.
const ConditionFired = "Fired"

// Reasons of ConditionFired, by state.
var conditionReasons = map[report.State]string{
	StateActing:                   "InProgress",
	report.StateWaiting:           "Waiting",
	report.StateFired:             "Fired",
	report.StateFailed:            "Failed",
	report.StateDeferred:          "Deferred",
	report.StateInvalid:           "Invalid",
	report.StateForbidden:         "Forbidden",
	report.StateTargetMissing:     "TargetMissing",
	report.StateTargetTerminating: "TargetTerminating",
	StateWatching:                 "Watching",
	report.StateAsleep:            "Asleep",
}

// MaxMessage bounds the messages stored on a manager.
const MaxMessage = 1024

// Observe sets the fields that describe entry e, keeping the condition's
// transition time when its status did not change.
func (st *Status) Observe(e report.Entry, generation int64, now time.Time) {
	st.ObservedGeneration = generation
	st.State = e.State
	st.Target = e.Target
	st.NextDue = nil
	if e.Due != nil {
		st.NextDue = &metav1.Time{Time: *e.Due}
	}
	st.Message = Truncate(e.Message, MaxMessage)
	status := metav1.ConditionFalse
	if e.State == report.StateFired {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               ConditionFired,
		Status:             status,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.Time{Time: now.UTC().Truncate(time.Second)},
		Reason:             conditionReasons[e.State],
		Message:            st.Message,
	})
}

// Truncate cuts s to at most n bytes, ending in "..." when cut, and never
// in the middle of a UTF-8 sequence: the API server refuses invalid UTF-8.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// StateActing is never in a report: a manager's status shows it while the
// sweep that claimed it acts (ConditionFired False, InProgress), so that it
// says an action succeeded only after it did.
const StateActing report.State = "acting"

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
	// 1, and the owner OWNER_GONE policies remember, by policy name.
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
	// TrafficUnknown says why an IDLE policy's traffic is not known, while
	// it is not (a manager's record only): a Warning Event is written when
	// it changes.
	TrafficUnknown string `json:"trafficUnknown,omitempty"`
	// Asleep is set while a SLEEP policy keeps the target asleep: from the
	// sweep that put it to sleep (or tried to) to the one that woke it.
	Asleep *Asleep `json:"asleep,omitempty"`
	// Warned is what a policy's warnBefore told for one due time: a due
	// time that moves finds none sent for it, and warns again.
	Warned *Warned `json:"warned,omitempty"`
}

// Warned records the warnings of one policy sent for one due time.
type Warned struct {
	Policy string    `json:"policy"`
	Due    time.Time `json:"due"`
	// Before are the thresholds (warnBefore) told or passed at once, as
	// Go durations (24h0m0s).
	Before []string `json:"before"`
}

// Asleep says which SLEEP policy put the target to sleep, and when.
type Asleep struct {
	Policy string    `json:"policy"`
	Since  time.Time `json:"since"`
	// Partial: the sleep failed part-way; the next sweep puts the rest to
	// sleep while the policy holds, or wakes what slept once it does not.
	Partial bool `json:"partial,omitempty"`
}

// Clone returns a copy that shares nothing a sweep modifies in place.
func (p Progress) Clone() Progress {
	p.Fired = slices.Clone(p.Fired)
	p.Checks = maps.Clone(p.Checks)
	if p.Warned != nil {
		w := *p.Warned
		w.Before = slices.Clone(w.Before)
		p.Warned = &w
	}
	if p.LastAction != nil {
		p.LastAction = new(*p.LastAction)
	}
	return p
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

// FiredIn names the stages of fired that fired in generation (or, with
// spec, under that spec).
func FiredIn(fired []FiredPolicy, generation int64, spec string) map[string]bool {
	out := map[string]bool{}
	for _, f := range fired {
		if f.Generation == generation || spec != "" && f.Spec == spec {
			out[f.Policy] = true
		}
	}
	return out
}

// AddFired records that stage name fired in generation, dropping what
// fired in other generations: the list never outgrows the policies.
func AddFired(fired []FiredPolicy, name string, generation int64, spec string, now time.Time) []FiredPolicy {
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
	// Wake: the claim is a SLEEP policy's wake, not its sleep.
	Wake bool `json:"wake,omitempty"`
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
	// (the sweep's backoff after the latest): none does before.
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

// ClaimSkew is how much later than --claim-ttl after the server's now a
// claim may expire and still hold: the server's time, as two sweeps read it
// from its Date header (whole seconds), may differ by that much.
const ClaimSkew = 5 * time.Second

// Live reports whether claim c holds at now: it has not expired, and it
// does not expire further ahead than a sweep with ttl could have set. A
// claim from the future (a clock far ahead, or one written by hand) would
// otherwise keep every sweep away until then.
func (c *Claim) Live(now time.Time, ttl time.Duration) bool {
	return c != nil && now.Before(c.Expires) && !c.Expires.After(now.Add(ttl+ClaimSkew))
}

// SameCause is the stuck record to keep, was being stored and now what a
// sweep found: was while the cause is the same, so that a count of objects
// left going down rewrites nothing.
func SameCause(was, now *report.Stuck) *report.Stuck {
	if was != nil && now != nil && was.Cause() == now.Cause() {
		return was
	}
	return now
}
