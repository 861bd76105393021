package decide

import (
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
)

// apply turns an action into waiting until the hold ends, and moves a
// waiting decision's due time to the hold's end, never earlier.
func TestHoldApply(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	until := now.Add(time.Hour)
	st := Holds{Until: until, By: "namespace a"}
	d := applyHold(st, Decision{Entry: report.Entry{State: report.StatePlanned}, Plan: &Plan{Step: StepAct}})
	if d.Plan != nil || d.Entry.State != report.StateWaiting || d.Entry.Due == nil || !d.Entry.Due.Equal(until) || d.Entry.HeldUntil == nil {
		t.Errorf("held action: %+v", d)
	}
	early := now.Add(time.Minute)
	d = applyHold(st, Decision{Entry: report.Entry{State: report.StateWaiting, Due: &early}})
	if !d.Entry.Due.Equal(until) || !strings.Contains(d.Entry.Message, "held until") {
		t.Errorf("held wait: due %v, message %q", d.Entry.Due, d.Entry.Message)
	}
	late := now.Add(2 * time.Hour)
	if d = applyHold(st, Decision{Entry: report.Entry{State: report.StateWaiting, Due: &late}}); !d.Entry.Due.Equal(late) {
		t.Errorf("a due time after the hold moved to %v", d.Entry.Due)
	}
	// Completing a claim is finishing an action already started: no hold.
	if d = applyHold(st, Decision{Plan: &Plan{Step: StepCompleteClaim}}); d.Plan == nil {
		t.Error("a claim's completion was held")
	}
}
