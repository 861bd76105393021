package decide

import (
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/warn"
	"github.com/nsman/nsman/report"
)

// warned adds to d, the decision on a subject left waiting, the warning its
// policies' warnBefore call for at ev.Now (warn.Next): the first policy
// evaluated that has thresholds and a due time within one not told for that
// due time yet (stored). A hold that ends after the due time moves it there,
// as it moves the action; a policy that holds under a hold is due at its
// end. The executor tells it and records it (Decision.Warned); a subject
// with a plan, or not waiting, is not warned. t is the target, as listed.
func (ev *Evaluator) warned(d Decision, m policy.Manager, t Target, states []policy.PolicyState, stored *status.Warned, heldUntil time.Time) Decision {
	if d.Plan != nil || d.Untouched || d.Entry.State != report.StateWaiting {
		return d
	}
	for _, st := range states {
		i := policyIndex(m, st.Name)
		if i < 0 || len(m.Policies[i].WarnBefore) == 0 {
			continue
		}
		p, due := m.Policies[i], st.Due
		if st.Holds || heldUntil.After(due) {
			due = heldUntil
		}
		var sent []time.Duration
		if stored != nil && stored.Policy == p.Name && stored.Due.Equal(due) {
			sent = durations(stored.Before)
		}
		threshold, ok := warn.Next(due, ev.Now, p.WarnBefore, sent)
		if !ok {
			continue
		}
		d.Warned, d.WarnedTarget = &status.Warned{Policy: p.Name, Due: due.UTC(), Before: texts(warn.Crossed(due, ev.Now, p.WarnBefore))}, t
		d.Entry.Warning = &report.Warning{Policy: p.Name, Action: p.Action.Type, Due: due.UTC(), Before: threshold.String()}
		return d
	}
	return d
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
