package sweep

import (
	"fmt"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// applyHold turns a decision that would act into a waiting one, due no earlier
// than the hold ends, while a hold is in force, and says in every decision
// the hold that keeps it waiting, or the holds ignored.
func applyHold(st decide.Holds, d decision) decision {
	held := fmt.Sprintf("%s is held until %s (%s)", st.By, st.Until.Format(time.RFC3339), status.HoldAnnotation)
	until := st.Until
	if !until.IsZero() {
		d.entry.HeldUntil = &until
	}
	switch {
	case until.IsZero():
	case d.plan != nil && d.plan.step == stepAct:
		d.entry.State, d.entry.Message = report.StateWaiting, fmt.Sprintf("policy %q holds, but %s", d.plan.policy.Name, held)
		d.entry.Policy, d.entry.Action, d.entry.Due = "", "", &until
		d.plan = nil
	case d.entry.State == report.StateWaiting:
		d.entry.Message += "; " + held
		if d.entry.Due != nil && d.entry.Due.Before(until) {
			d.entry.Due = &until
		}
	}
	if d.entry.HoldIgnored = st.Ignored; st.Ignored != "" {
		d.entry.Message += "; hold ignored: " + st.Ignored
	}
	return d
}
