package policy

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
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
)

func (v Verdict) String() string {
	switch v {
	case Fire:
		return "fire"
	case NeedPods:
		return "need-pods"
	case NeedActivity:
		return "need-activity"
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

// CheckState is the progress of a PODS_SUCCEED policy with minChecks > 1
// across sweeps; the sweep persists it on the manager.
type CheckState struct {
	// Generation of the manager the progress was made under: a changed spec
	// starts over.
	Generation int64 `json:"generation"`
	// Passed counts consecutive checks that found every pod Succeeded.
	Passed int `json:"passed"`
	// Last is when the last of them ran.
	Last time.Time `json:"last"`
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

// What an IDLE condition says of the activity it knows without reading
// the namespace: its creation, its TouchedAnnotation.
const (
	ActivityCreated = "namespace created"
	ActivityTouched = "touched (annotation " + TouchedAnnotation + ")"
)

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
	Due time.Time
	// Problem says which annotation of the target the condition ignores,
	// and why: an ExpiresAnnotation that does not parse (the condition
	// never holds by it), a TouchedAnnotation that does not parse or is
	// more than TouchLeeway ahead (as if it were not there).
	Problem string
	// LastActivity is, for IDLE, the newest activity it counted.
	LastActivity *Activity
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
		case NeedPods, NeedActivity:
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

// judge judges policy p, the i-th, by its condition.
func judge(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) Verdict {
	switch p.Condition.Type {
	case ConditionTTL:
		return judgeTTL(state, p.Condition, in)
	case ConditionPodsSucceed:
		return judgePodsSucceed(state, out, generation, i, p, in)
	case ConditionPodsFailed:
		return judgePodsFailed(state, i, p.Condition, in)
	case ConditionExpires:
		return judgeExpires(state, p.Condition, in)
	case ConditionIdle:
		return judgeIdle(state, p.Condition, in)
	}
	return Wait
}

// judgeInWindows judges policy p, which may act only in its windows: one
// that holds outside them waits for the next to open (still said to hold),
// one that waits for a time waits for the first open one from then, and
// neither pods nor an IDLE policy's activity are read while every window
// is closed.
func judgeInWindows(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) Verdict {
	open := nextOpen(p.Windows, in.Now)
	closed := !open.Equal(in.Now)
	pods := p.Condition.Type == ConditionPodsSucceed || p.Condition.Type == ConditionPodsFailed
	if closed && pods {
		state.Detail = fmt.Sprintf("outside its windows (%s): pods are checked from %s", describeWindows(p.Windows), stamp(open))
		state.Due = open
		return Wait
	}
	verdict := judge(state, out, generation, i, p, in)
	switch {
	case verdict == NeedActivity && closed:
		state.Detail = fmt.Sprintf("outside its windows (%s): its activity is read from %s", describeWindows(p.Windows), stamp(open))
		if state.Problem != "" {
			state.Detail += " (" + state.Problem + ")"
		}
		state.Due = open
		return Wait
	case verdict == Fire && closed:
		state.Detail += fmt.Sprintf("; outside its windows (%s): it acts at %s", describeWindows(p.Windows), stamp(open))
		state.Due = open
		return Wait
	case verdict == Wait && !state.Due.IsZero():
		state.Due = nextOpen(p.Windows, state.Due)
	}
	return verdict
}

// judgeTTL judges a TTL condition: it holds once the target is c.TTL old.
func judgeTTL(state *PolicyState, c Condition, in Input) Verdict {
	due := in.TargetCreated.Add(c.TTL)
	if !in.Now.Before(due) {
		state.Holds = true
		state.Detail = fmt.Sprintf("TTL %s elapsed at %s", c.TTL, stamp(due))
		return Fire
	}
	state.Detail = fmt.Sprintf("TTL %s elapses at %s", c.TTL, stamp(due))
	state.Due = due
	return Wait
}

// judgeExpires judges an EXPIRES condition: it holds once c.At, else the
// target's ExpiresAnnotation, has passed.
func judgeExpires(state *PolicyState, c Condition, in Input) Verdict {
	at, by := c.At, "params.at"
	if at.IsZero() {
		if in.TargetExpires == "" {
			state.Detail = "the namespace has no annotation " + ExpiresAnnotation + ": it never expires by it"
			return Wait
		}
		var err error
		if at, err = ParseExpiry(in.TargetExpires); err != nil {
			state.Problem = fmt.Sprintf("annotation %s: %v: the namespace never expires by it", ExpiresAnnotation, err)
			state.Detail = state.Problem
			return Wait
		}
		by = "annotation " + ExpiresAnnotation
	}
	if !in.Now.Before(at) {
		state.Holds = true
		state.Detail = fmt.Sprintf("expired at %s (%s)", stamp(at), by)
		return Fire
	}
	state.Detail = fmt.Sprintf("expires at %s (%s)", stamp(at), by)
	state.Due = at
	return Wait
}

// judgeIdle judges an IDLE condition: it holds once the target's last
// activity is c.Idle old. Its creation and touched annotation are known; the
// rest (Input.Activity) is asked for only when those alone would let it hold.
// A touched annotation that does not parse, or says a time more than
// TouchLeeway ahead of Now, is ignored (and said so, in Problem), as a hold
// that does not parse is: an annotation keeps no namespace forever.
func judgeIdle(state *PolicyState, c Condition, in Input) Verdict {
	last := Activity{At: in.TargetCreated, What: ActivityCreated}
	if in.TargetTouched != "" {
		touched, err := ParseTouched(in.TargetTouched)
		switch {
		case err != nil:
			state.Problem = fmt.Sprintf("annotation %s: %v: ignored", TouchedAnnotation, err)
		case touched.After(in.Now.Add(TouchLeeway)):
			state.Problem = fmt.Sprintf("annotation %s: %s is more than %s ahead: ignored", TouchedAnnotation, stamp(touched), TouchLeeway)
		case touched.After(last.At):
			last = Activity{At: touched, What: ActivityTouched}
		}
	}
	switch {
	case in.Activity != nil && in.Activity.At.After(last.At):
		last = *in.Activity
	case in.Activity == nil && !in.Now.Before(last.At.Add(c.Idle)):
		return NeedActivity
	}
	state.LastActivity = &last
	due := last.At.Add(c.Idle)
	ignored := ""
	if state.Problem != "" {
		ignored = " (" + state.Problem + ")"
	}
	if !in.Now.Before(due) {
		state.Holds = true
		state.Detail = fmt.Sprintf("idle %s since %s (last activity: %s)%s", c.Idle, stamp(last.At), last.What, ignored)
		return Fire
	}
	state.Detail = fmt.Sprintf("last activity: %s at %s; idle %s at %s%s", last.What, stamp(last.At), c.Idle, stamp(due), ignored)
	state.Due = due
	return Wait
}

// TouchLeeway is how far ahead of a sweep's clock a TouchedAnnotation may
// be, and count: the clock of whoever wrote it may run ahead of the API
// server's.
const TouchLeeway = 5 * time.Minute

// ParseTouched parses a TouchedAnnotation: an RFC 3339 time, also with a
// space or a lower-case t between date and time, as RFC 3339 allows (date
// --rfc-3339=seconds writes one).
func ParseTouched(s string) (time.Time, error) {
	normal := s
	if len(s) > 10 && (s[10] == ' ' || s[10] == 't') {
		normal = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(normal, "z") {
		normal = normal[:len(normal)-1] + "Z"
	}
	t, err := time.Parse(time.RFC3339, normal)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (2026-11-24T09:30:00Z)", cut(s, 64))
	}
	return t, nil
}

// ParseExpiry parses an ExpiresAnnotation: an RFC 3339 time, or a date
// YYYY-MM-DD, which expires at the end of that day in UTC (midnight after
// it).
func ParseExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.AddDate(0, 0, 1), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-12-01T18:00:00Z) nor a date (2026-12-01)", cut(s, 64))
}

// judgePodsSucceed judges policy p, the i-th, a PODS_SUCCEED condition: it
// holds once every matching pod succeeded in MinChecks consecutive checks,
// Period apart, whose progress it keeps in out.Checks under the manager's
// generation.
func judgePodsSucceed(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) Verdict {
	c := p.Condition
	if delayed(state, in, c, "first pods check") {
		return Wait
	}
	progress := in.Checks[p.Name]
	if progress.Generation != generation {
		progress = CheckState{}
	}
	if c.MinChecks > 1 && progress.Passed > 0 {
		if next := progress.Last.Add(c.Period); in.Now.Before(next) {
			state.Detail = fmt.Sprintf("%d of %d checks passed, next at %s", progress.Passed, c.MinChecks, stamp(next))
			state.Due = next
			return Wait
		}
	}
	pods, checked := in.Pods[i]
	if !checked {
		return NeedPods
	}
	selector := describeSelector(c.PodLabels)
	if pods.NotSucceeded > 0 {
		delete(out.Checks, p.Name)
		state.Detail = fmt.Sprintf("not every pod %s Succeeded: %s", selector, pods.Example)
		return Wait
	}
	passed := progress.Passed + 1
	if passed >= c.MinChecks {
		state.Holds = true
		state.Detail = fmt.Sprintf("every pod %s Succeeded", selector)
		if c.MinChecks > 1 {
			state.Detail += fmt.Sprintf(" in %d consecutive checks", passed)
		}
		return Fire
	}
	if out.Checks == nil {
		out.Checks = map[string]CheckState{}
	}
	out.Checks[p.Name] = CheckState{Generation: generation, Passed: passed, Last: in.Now}
	state.Due = in.Now.Add(c.Period)
	state.Detail = fmt.Sprintf("%d of %d checks passed, next at %s", passed, c.MinChecks, stamp(state.Due))
	return Wait
}

// judgePodsFailed judges the i-th policy's PODS_FAILED condition c: it holds
// once a matching pod, or a Job whose pods match, failed.
func judgePodsFailed(state *PolicyState, i int, c Condition, in Input) Verdict {
	if delayed(state, in, c, "first check for failed pods") {
		return Wait
	}
	pods, checked := in.Pods[i]
	if !checked {
		return NeedPods
	}
	selector := describeSelector(c.PodLabels)
	if pods.Failed > 0 {
		state.Holds = true
		state.Detail = fmt.Sprintf("a pod %s failed: %s", selector, pods.Example)
		return Fire
	}
	state.Detail = fmt.Sprintf("no pod %s has failed", selector)
	return Wait
}

// delayed reports whether the target is younger than c's initial delay,
// and then says in state when the first check (what) comes.
func delayed(state *PolicyState, in Input, c Condition, what string) bool {
	start := in.TargetCreated.Add(c.InitialDelay)
	if !in.Now.Before(start) {
		return false
	}
	state.Detail = fmt.Sprintf("%s after the initial delay, at %s", what, stamp(start))
	state.Due = start
	return true
}

func (out Outcome) fire(i int, state PolicyState) Outcome {
	out.Verdict, out.Policy, out.Reason = Fire, i, state.Detail
	out.Policies = append(out.Policies, state)
	out.NextDue = time.Time{}
	return out
}

func describeSelector(set map[string]string) string {
	if len(set) == 0 {
		return "in the namespace"
	}
	return "matching " + labels.SelectorFromSet(set).String()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
