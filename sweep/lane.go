package sweep

import (
	"context"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/report"
)

// subject is what the sweep's one lane carries a decision out for: a
// manager, or a namespace of a rule. What differs between the two is data:
// its record, how it is evaluated again just before a place granted under
// --max-actions acts, where its entry goes, and whether a WEBHOOK waits in
// the hook queue.
type subject struct {
	rec record.Record
	// again evaluates the subject anew, on reads made then.
	again func() decide.Decision
	// done takes the subject's entry once its decision is carried out.
	done func(report.Entry)
	// hook queues a WEBHOOK for the webhook workers (see queue); nil: it
	// is carried out where it was evaluated, as a rule's namespaces are,
	// within the slots the rules share (pairSlots).
	hook func(decide.Decision)
}

// carry carries out d, decided on subj: once the executor grants it a
// place under --max-actions, evaluated again first (or deferred); else a
// WEBHOOK in the hook queue, when subj has one; else at once. It reports
// whether it offered a place: the subject's entry comes after Grant.
func (r *sweepRun) carry(ctx context.Context, subj subject, d decide.Decision) (offered bool) {
	switch {
	case r.exec.WantsPlace(d):
		r.exec.Offer(d.Entry, func(granted bool) {
			if granted {
				d = subj.again()
				d.Granted = true
			}
			subj.done(r.exec.CarryOut(ctx, subj.rec, d))
		})
		return true
	case subj.hook != nil && d.Plan != nil && d.Plan.Step != decide.StepDeactivate && d.Plan.Policy.Action.Kind().Queues():
		subj.hook(d)
	default:
		subj.done(r.exec.CarryOut(ctx, subj.rec, d))
	}
	return false
}
