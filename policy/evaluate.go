package policy

import (
	"fmt"
	"maps"
	"time"

	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/policy/window"
)

// Verdict is what an evaluation concluded.
type Verdict int

const (
	// Wait: no policy holds now.
	Wait Verdict = iota
	// Fire: Outcome.Policy holds; apply its action.
	Fire
	// NeedPods: Outcome.Policy is a PODS_SUCCEED policy whose pods must be
	// checked before anything can be decided. Check them, add the result to
	// Input.Pods and evaluate again.
	NeedPods
	// NeedActivity: Outcome.Policy is an IDLE policy that the target's
	// creation and touched annotation alone cannot decide: find its newest
	// activity, set Input.Activity and evaluate again.
	NeedActivity
	// NeedTraffic: Outcome.Policy is an IDLE policy with a traffic source
	// whose target is idle by every other activity: read its requests in
	// the condition's window, set Input.Traffic and evaluate again.
	NeedTraffic
)

func (v Verdict) String() string {
	switch v {
	case Fire:
		return "fire"
	case NeedPods:
		return "need-pods"
	case NeedActivity:
		return "need-activity"
	case NeedTraffic:
		return "need-traffic"
	}
	return "wait"
}

// PodsCheck is the result of checking a PODS_SUCCEED or PODS_FAILED
// policy's pods.
type PodsCheck struct {
	// Failed, for PODS_FAILED, counts the matching pods in phase Failed
	// and the failed Jobs whose pods match that the check saw; a check may
	// stop at the first one. Example then names it.
	Failed int
	// NotSucceeded counts the matching pods in another phase than Succeeded
	// (pending, running, failed or unknown) that the check saw; a check may
	// stop at the first one.
	NotSucceeded int
	// Example names one of them and its phase, for messages.
	Example string
}

// CheckState is the progress of a PODS_SUCCEED policy with minChecks > 1,
// or what an OWNER_GONE policy remembers of the target's owner, across
// sweeps; the sweep persists it in the manager's or pair's record.
type CheckState struct {
	// Generation of the manager the progress was made under: a changed spec
	// starts over.
	Generation int64 `json:"generation"`
	// Passed counts consecutive checks that found every pod Succeeded.
	Passed int `json:"passed"`
	// Last is when the last of them ran.
	Last time.Time `json:"last"`
	// Owner, for OWNER_GONE, is the ref of the target's owner last read
	// (Owner.Ref), remembered for when no marker names it any more.
	Owner string `json:"owner,omitempty"`
	// GoneSince, for OWNER_GONE, is when a sweep first found Owner gone;
	// zero while it exists. It is in UTC without a monotonic reading, so
	// that it compares equal after a JSON round trip.
	GoneSince time.Time `json:"goneSince,omitzero"`
}

// Input is everything an evaluation depends on besides the manager.
type Input struct {
	// Now is the API server's current time.
	Now time.Time
	// TargetCreated is the target namespace's creationTimestamp.
	TargetCreated time.Time
	// Checks is the persisted progress of PODS_SUCCEED policies by name.
	Checks map[string]CheckState
	// Pods holds the pods checks made for this evaluation, by policy index.
	Pods map[int]PodsCheck
	// Fired names the policies that are not final and fired already in
	// this generation: they are skipped.
	Fired map[string]bool
	// TargetExpires is the target's ExpiresAnnotation, "" when it has none;
	// TargetTouched its TouchedAnnotation.
	TargetExpires, TargetTouched string
	// WokenUntil, when after Now, is when a wake on demand (WakeAnnotation
	// on the target or the manager, which WokenBy names) ends: until then
	// no SLEEP policy holds, and an asleep target wakes.
	WokenUntil time.Time
	WokenBy    string
	// Activity is the newest creation of a pod, ReplicaSet,
	// ControllerRevision or Job in the target, once looked for (NeedActivity):
	// nil before; a zero At when there is none.
	Activity *Activity
	// Traffic holds the traffic reads made for this evaluation, by policy
	// index.
	Traffic map[int]traffic.Answer
	// Owner is the target's owner, for a condition whose Evidence asks for
	// it: nil when the target names none and its record remembers none.
	Owner *Owner
	// Asleep names the SLEEP policy the target was put to sleep by, as
	// nsman recorded it; "" when the target is awake. It decides whether a
	// SLEEP policy that holds (or no longer does) is a transition at all.
	Asleep string
}

// Activity is something that happened in a namespace, and when.
type Activity struct {
	At   time.Time
	What string
}

// PolicyState describes one policy's condition at evaluation time.
type PolicyState struct {
	Name  string
	Holds bool
	// Detail says why it holds, or what it waits for.
	Detail string
	// Due is when the condition can next change through time alone; zero
	// when only pods can change it. For a SLEEP policy while the target is
	// asleep, it is when the sleep ends through time alone (zero when only
	// activity or pods can end it, or the policy does not hold).
	Due     time.Time
	Outside time.Time // with windows: when the condition comes due (Now, holding), windows aside; Due: one open then
	// Problem says which annotation of the target the condition ignores,
	// and why: an ExpiresAnnotation that does not parse (the condition
	// never holds by it), a TouchedAnnotation that does not parse or is
	// more than TouchLeeway ahead (as if it were not there).
	Problem string
	// LastActivity is, for IDLE, the newest activity it counted.
	LastActivity *Activity
	// Traffic is, for IDLE with a traffic source, what the source
	// answered, once read.
	Traffic *traffic.Answer
}

// Outcome is the result of Evaluate.
type Outcome struct {
	Verdict Verdict
	// Policy is the index of the policy that fires or needs a pods check.
	Policy int
	// Reason says why the policy fires.
	Reason string
	// Wake is set when Verdict is Fire and the transition wakes the target:
	// it is asleep and no SLEEP policy holds any longer. Policy is then the
	// SLEEP policy Input.Asleep names, or the manager's first SLEEP policy
	// when Input.Asleep names none of them (the spec changed since).
	Wake bool
	// NextDue is the earliest time at which waiting can end through time
	// alone; zero when only a change of pods can end it.
	NextDue time.Time
	// Policies describes each policy evaluated, in order; policies after one
	// that fires are not evaluated. A SLEEP transition describes the SLEEP
	// policies judged, the one firing last.
	Policies []PolicyState
	// Checks is the progress to persist. It equals Input.Checks when nothing
	// changed.
	Checks map[string]CheckState
}

// Evaluate applies m's policies in order at in.Now: the first whose condition
// holds fires. SLEEP policies instead say together, at the first of them,
// whether the target should be asleep: one that holds puts an awake target
// to sleep, none holding wakes an asleep one (Outcome.Wake), and else the
// walk goes on past them. It is pure: pods checks are asked for (NeedPods)
// rather than made, so a manager that is not due costs no request.
func Evaluate(m Manager, in Input) Outcome {
	out := Outcome{Checks: maps.Clone(in.Checks)}
	var sleeping map[int]PolicyState
	for i, p := range m.Policies {
		state := PolicyState{Name: p.Name}
		verdict := Wait
		switch {
		case p.Action.Kind().KeepsState():
			if sleeping == nil {
				var done bool
				if sleeping, done = evaluateSleep(&out, m, in); done {
					return out
				}
			}
			state = sleeping[i]
		case !p.Final && in.Fired[p.Name]:
			state.Detail = "fired already in this generation"
		case len(p.Windows) > 0:
			verdict = judgeInWindows(&state, &out, m.Generation, i, p, in)
		default:
			verdict = judge(&state, &out, m.Generation, i, p, in)
		}
		switch verdict {
		case NeedPods, NeedActivity, NeedTraffic:
			out.Verdict, out.Policy = verdict, i
			return out
		case Fire:
			return out.fire(i, state)
		}
		out.Policies = append(out.Policies, state)
		if !state.Due.IsZero() && (out.NextDue.IsZero() || state.Due.Before(out.NextDue)) {
			out.NextDue = state.Due
		}
	}
	out.Verdict = Wait
	return out
}

// judge judges policy p, the i-th, by its condition's type; an unknown
// type never holds.
func judge(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) Verdict {
	t, ok := LookupCondition(p.Condition.Type)
	if !ok {
		return Wait
	}
	verdict, judged, checks := t.judge(judging{state: *state, checks: out.Checks, generation: generation, i: i, p: p, in: in})
	*state, out.Checks = judged, checks
	return verdict
}

// judgeInWindows judges policy p, which may act only in its windows: one
// that holds outside them waits for the next to open (still said to hold),
// one that waits for a time waits for the first open one from then, and
// neither pods nor an IDLE policy's activity are read while every window
// is closed.
func judgeInWindows(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) Verdict {
	open := window.NextOpen(p.Windows, in.Now)
	if open.IsZero() {
		state.Detail, state.Due = window.NoMoreOpen(p.Windows), time.Time{}
		return Wait
	}
	closed := !open.Equal(in.Now)
	pods := p.Condition.Evidence().Pods != NoPods
	if closed && pods {
		state.Detail = fmt.Sprintf("outside its windows (%s): pods are checked from %s", window.Describe(p.Windows), stamp(open))
		state.Due = open
		return Wait
	}
	verdict := judge(state, out, generation, i, p, in)
	switch {
	case (verdict == NeedActivity || verdict == NeedTraffic) && closed:
		state.Detail = fmt.Sprintf("outside its windows (%s): its activity is read from %s", window.Describe(p.Windows), stamp(open))
		if state.Problem != "" {
			state.Detail += " (" + state.Problem + ")"
		}
		state.Due = open
		return Wait
	case verdict == Fire && closed:
		state.Detail += fmt.Sprintf("; outside its windows (%s): it acts at %s", window.Describe(p.Windows), stamp(open))
		state.Due, state.Outside = open, in.Now
		return Wait
	case verdict == Wait && !state.Due.IsZero():
		if state.Outside, state.Due = state.Due, window.NextOpen(p.Windows, state.Due); state.Due.IsZero() {
			state.Detail += "; " + window.NoMoreOpen(p.Windows) + " by then"
		}
	}
	return verdict
}

func (out Outcome) fire(i int, state PolicyState) Outcome {
	out.Verdict, out.Policy, out.Reason, out.NextDue = Fire, i, state.Detail, time.Time{}
	out.Policies = append(out.Policies, state)
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
