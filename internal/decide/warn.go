package decide

import (
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/durtext"
	"github.com/nsman/nsman/policy/warn"
	"github.com/nsman/nsman/report"
)

// warned adds to d, the decision on a subject left waiting, the warning its
// policies' warnBefore call for at ev.Now (warn.Next), of what happens next
// only: of the policies evaluated that have thresholds and a due time, the
// one due soonest (the first of those due together; see nextWarned), when
// it is within a threshold not told for that due time yet (stored). The
// others are warned of once it has acted (a stage fired: it has no due
// time any more) or its due time moved past theirs: warning of each in
// turn would overwrite the one record (status.Warned) and warn of them
// again and again. The executor tells it and records it (Decision.Warned);
// a subject with a plan, or not waiting, is not warned. t is the target,
// as listed.
func (ev *Evaluator) warned(d Decision, m policy.Manager, t Target, states []policy.PolicyState, stored *status.Warned, heldUntil time.Time) Decision {
	if d.Plan != nil || d.Untouched || d.Entry.State != report.StateWaiting {
		return d
	}
	p, due, ok := nextWarned(m, states, heldUntil)
	if !ok {
		return d
	}
	var sent []time.Duration
	if stored != nil && stored.Policy == p.Name && stored.Due.Equal(due) {
		sent = durations(stored.Before)
	}
	threshold, ok := warn.Next(due, ev.Now, p.WarnBefore, sent)
	if !ok {
		return d
	}
	d.Warned, d.WarnedTarget = &status.Warned{Policy: p.Name, Due: due.UTC(), Before: texts(warn.Crossed(due, ev.Now, p.WarnBefore))}, t
	d.Entry.Warning = &report.Warning{Policy: p.Name, Action: p.Action.Type, Due: due.UTC(), Before: durtext.Format(threshold)}
	return d
}

// nextWarned is the policy of m, among those states describes that have
// warnBefore thresholds and a due time, that is due soonest, the first of
// those due together, and its due time; ok is false when there is none. A
// hold that ends after a due time moves it there, as it moves the action;
// a policy that holds under a hold is due at its end; one without a due
// time (a stage fired already, a condition only pods can change) has none
// under a hold either.
func nextWarned(m policy.Manager, states []policy.PolicyState, heldUntil time.Time) (next policy.Policy, due time.Time, ok bool) {
	for _, st := range states {
		i := policyIndex(m, st.Name)
		if i < 0 || len(m.Policies[i].WarnBefore) == 0 {
			continue
		}
		at := st.Due
		if st.Holds || !at.IsZero() && heldUntil.After(at) {
			at = heldUntil
		}
		if !at.IsZero() && (!ok || at.Before(due)) {
			next, due, ok = m.Policies[i], at, true
		}
	}
	return next, due, ok
}

// durations are the thresholds a record keeps as text; one that does not
// parse (written by hand) counts as none.
func durations(texts []string) []time.Duration {
	var out []time.Duration
	for _, s := range texts {
		if d, err := time.ParseDuration(s); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// texts are thresholds as a record keeps them.
func texts(ds []time.Duration) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}
