package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/report"
)

// apply turns an action into waiting until the hold ends, and moves a
// waiting decision's due time to the hold's end, never earlier.
func TestHoldApply(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	until := now.Add(time.Hour)
	st := decide.Holds{Until: until, By: "namespace a"}
	d := applyHold(st, decision{entry: report.Entry{State: report.StatePlanned}, plan: &plan{step: stepAct}})
	if d.plan != nil || d.entry.State != report.StateWaiting || d.entry.Due == nil || !d.entry.Due.Equal(until) || d.entry.HeldUntil == nil {
		t.Errorf("held action: %+v", d)
	}
	early := now.Add(time.Minute)
	d = applyHold(st, decision{entry: report.Entry{State: report.StateWaiting, Due: &early}})
	if !d.entry.Due.Equal(until) || !strings.Contains(d.entry.Message, "held until") {
		t.Errorf("held wait: due %v, message %q", d.entry.Due, d.entry.Message)
	}
	late := now.Add(2 * time.Hour)
	if d = applyHold(st, decision{entry: report.Entry{State: report.StateWaiting, Due: &late}}); !d.entry.Due.Equal(late) {
		t.Errorf("a due time after the hold moved to %v", d.entry.Due)
	}
	// Completing a claim is finishing an action already started: no hold.
	if d = applyHold(st, decision{plan: &plan{step: stepCompleteClaim}}); d.plan == nil {
		t.Error("a claim's completion was held")
	}
}
