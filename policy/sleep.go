package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nsman/nsman/policy/window"
)

// maxChained bounds how many windows, each opening as another closes,
// sleepEnd follows: windows that leave no gap in the week would chain
// forever.
const maxChained = 64

// evaluateSleep judges every SLEEP policy of m, at the first of them in
// the walk: the target should be asleep while one of them holds, and a
// transition (or a pods check, or the activity) is all Evaluate may answer
// there. done is true when out is that answer; else states are the SLEEP
// policies' states, by index, for the walk to record in their turn.
func evaluateSleep(out *Outcome, m Manager, in Input) (states map[int]PolicyState, done bool) {
	var order []int
	for i, p := range m.Policies {
		if p.Action.Kind().KeepsState() {
			order = append(order, i)
		}
	}
	states, want, held, done := judgeSleepers(out, m, in, order)
	if done {
		return nil, true
	}
	if in.WokenUntil.After(in.Now) {
		// Woken on demand: no SLEEP policy holds until then.
		woken := fmt.Sprintf("woken until %s by %s (%s)", stamp(in.WokenUntil), in.WokenBy, WakeAnnotation)
		for _, i := range order {
			if state := states[i]; state.Holds {
				state.Holds, state.Detail, state.Due = false, state.Detail+"; "+woken, in.WokenUntil
				states[i] = state
			}
		}
		if in.Asleep != "" {
			*out = wake(*out, m, in, order, states)
			return nil, true
		}
		return states, false
	}
	switch {
	case in.Asleep == "" && want >= 0:
		for _, i := range order[:slices.Index(order, want)] {
			out.Policies = append(out.Policies, states[i])
		}
		state := states[want]
		state.Detail = fmt.Sprintf("policy %q holds (%s): sleep", state.Name, state.Detail)
		*out = out.fire(want, state)
		return nil, true
	case in.Asleep != "" && want < 0:
		*out = wake(*out, m, in, order, states)
		return nil, true
	case in.Asleep != "":
		asleepUntil(states, order, sleepEnd(m, held, in.Now))
	}
	return states, false
}

// judgeSleepers judges the SLEEP policies of m (order) at in: their
// states, the first that holds (want, -1 for none) and those whose
// condition holds (held); done when out asks for evidence to read.
func judgeSleepers(out *Outcome, m Manager, in Input, order []int) (states map[int]PolicyState, want int, held []int, done bool) {
	states, want = make(map[int]PolicyState, len(order)), -1
	for _, i := range order {
		p := m.Policies[i]
		state := PolicyState{Name: p.Name}
		verdict, conditionHolds := judgeSleep(&state, out, m.Generation, i, p, in)
		switch verdict {
		case NeedPods, NeedActivity, NeedTraffic:
			out.Verdict, out.Policy = verdict, i
			return nil, -1, nil, true
		case Fire:
			if want < 0 {
				want = i
			}
		}
		if conditionHolds {
			held = append(held, i)
		}
		states[i] = state
		if want >= 0 && in.Asleep == "" && in.WokenUntil.IsZero() {
			break // it falls asleep: the policies after want change nothing
		}
	}
	return states, want, held, false
}

// asleepUntil says in the states of the SLEEP policies (order) of a target
// asleep that it is, until end (zero: until activity or pods end it).
func asleepUntil(states map[int]PolicyState, order []int, end time.Time) {
	for _, i := range order {
		state := states[i]
		// Asleep, a due time is when the sleep ends, not when a policy
		// that does not hold would start to.
		state.Due = time.Time{}
		if state.Holds {
			state.Due = end
			state.Detail += ": asleep"
			if !end.IsZero() {
				state.Detail += " until " + stamp(end)
			}
		}
		states[i] = state
	}
}

// wake is out firing the wake of a target asleep (by in.Asleep) that no
// SLEEP policy of m (order) holds for any longer: the policy in.Asleep
// names, else the first, says why.
func wake(out Outcome, m Manager, in Input, order []int, states map[int]PolicyState) Outcome {
	woken := order[0]
	prefix, verb := "", "no longer holds"
	if i := slices.IndexFunc(order, func(i int) bool { return m.Policies[i].Name == in.Asleep }); i >= 0 {
		woken = order[i]
	} else {
		prefix = fmt.Sprintf("policy %q, which put it to sleep, is no longer a SLEEP policy of the manager; ", in.Asleep)
		verb = "does not hold"
	}
	parts := []string{fmt.Sprintf("policy %q %s (%s)", m.Policies[woken].Name, verb, states[woken].Detail)}
	for _, i := range order {
		if i != woken {
			out.Policies = append(out.Policies, states[i])
			parts = append(parts, fmt.Sprintf("nor does policy %q (%s)", m.Policies[i].Name, states[i].Detail))
		}
	}
	state := states[woken]
	state.Detail = prefix + strings.Join(parts, ", ") + ": wake"
	out = out.fire(woken, state)
	out.Wake = true
	return out
}

// judgeSleep judges SLEEP policy p, the i-th: it holds (Fire) while its
// condition holds and, if it has windows, one of them is open; outside
// them it does not hold, and neither pods nor activity are read.
// conditionHolds says whether its condition holds, windows aside (false
// when it was not judged); Due is when it stops holding through time
// alone while it holds (its window closes), when it would start to while
// it does not.
func judgeSleep(state *PolicyState, out *Outcome, generation int64, i int, p Policy, in Input) (verdict Verdict, conditionHolds bool) {
	if len(p.Windows) == 0 {
		verdict = judge(state, out, generation, i, p, in)
		return verdict, verdict == Fire
	}
	open := window.NextOpen(p.Windows, in.Now)
	if open.IsZero() {
		state.Detail, state.Due = window.NoMoreOpen(p.Windows), time.Time{}
		return Wait, false
	}
	closed := !open.Equal(in.Now)
	outside := fmt.Sprintf("outside its windows (%s) until %s", window.Describe(p.Windows), stamp(open))
	if closed && p.Condition.Evidence().Pods != NoPods {
		state.Detail = outside + ": pods are checked then"
		state.Due = open
		return Wait, false
	}
	verdict = judge(state, out, generation, i, p, in)
	switch {
	case (verdict == NeedActivity || verdict == NeedTraffic) && closed:
		state.Detail = outside + ": its activity is read then"
		if state.Problem != "" {
			state.Detail += " (" + state.Problem + ")"
		}
		state.Due = open
		return Wait, false
	case verdict == Fire && closed:
		state.Holds = false
		state.Detail += "; " + outside
		state.Due = open
		return Wait, true
	case verdict == Fire:
		w, _ := window.Open(p.Windows, in.Now)
		state.Due = window.OpenUntil(p.Windows, in.Now)
		state.Detail += fmt.Sprintf("; in its window %s until %s", w, stamp(state.Due))
		return Fire, true
	case verdict == Wait && !state.Due.IsZero():
		if state.Due = window.NextOpen(p.Windows, state.Due); state.Due.IsZero() {
			state.Detail += "; " + window.NoMoreOpen(p.Windows) + " by then"
		}
	}
	return verdict, false
}

// sleepEnd is when a target asleep by the SLEEP policies whose conditions
// hold (held) wakes through time alone: when the last of their windows
// open closes, a window that is open as another closes carrying the sleep
// on. Zero when one of them has no windows: its condition, once it holds,
// holds until activity or pods end it. A condition that starts to hold
// meanwhile may carry the sleep further; the evaluation at the end sees
// it.
func sleepEnd(m Manager, held []int, now time.Time) time.Time {
	for _, i := range held {
		if len(m.Policies[i].Windows) == 0 {
			return time.Time{}
		}
	}
	end := now
	for range maxChained {
		later := end
		for _, i := range held {
			if until := window.OpenUntil(m.Policies[i].Windows, end); until.After(later) {
				later = until
			}
		}
		if later.Equal(end) {
			break
		}
		end = later
	}
	return end
}
