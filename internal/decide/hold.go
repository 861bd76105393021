package decide

import (
	"fmt"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// applyHold turns a decision that would act into a waiting one, due no earlier
// than the hold ends, while a hold is in force, and says in every decision
// the hold that keeps it waiting, or the holds ignored.
func applyHold(st Holds, d Decision) Decision {
	held := fmt.Sprintf("%s is held until %s (%s)", st.By, st.Until.Format(time.RFC3339), status.HoldAnnotation)
	until := st.Until
	if !until.IsZero() {
		d.Entry.HeldUntil = &until
	}
	switch {
	case until.IsZero():
	case d.Plan != nil && d.Plan.Step == StepAct:
		d.Entry.State, d.Entry.Message = report.StateWaiting, fmt.Sprintf("policy %q holds, but %s", d.Plan.Policy.Name, held)
		d.Entry.Policy, d.Entry.Action, d.Entry.Due = "", "", &until
		d.Plan = nil
	case d.Entry.State == report.StateWaiting:
		d.Entry.Message += "; " + held
		if d.Entry.Due != nil && d.Entry.Due.Before(until) {
			d.Entry.Due = &until
		}
	}
	if d.Entry.HoldIgnored = st.Ignored; st.Ignored != "" {
		d.Entry.Message += "; hold ignored: " + st.Ignored
	}
	return d
}
