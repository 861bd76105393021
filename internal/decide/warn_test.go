package decide

import (
	"slices"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

func TestWarned(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	due := at.Add(30 * time.Minute)
	warnedPolicy := func(before ...time.Duration) policy.Manager {
		return policy.Manager{Policies: []policy.Policy{
			{Name: "plain", Action: policy.Action{Type: policy.ActionWebhook}},
			{Name: "expire", Action: policy.Action{Type: policy.ActionDelete}, WarnBefore: before},
		}}
	}
	day, hour := 24*time.Hour, time.Hour
	waitingAt := func(d time.Time) []policy.PolicyState {
		return []policy.PolicyState{{Name: "plain", Due: at.Add(-time.Hour)}, {Name: "expire", Due: d}}
	}
	for _, tc := range []struct {
		name       string
		m          policy.Manager
		states     []policy.PolicyState
		stored     *status.Warned
		heldUntil  time.Time
		plan       bool
		wantBefore string
		wantDue    time.Time
		wantSent   []string
	}{
		{name: "no thresholds", m: warnedPolicy(), states: waitingAt(due)},
		{name: "not within one", m: warnedPolicy(10 * time.Minute), states: waitingAt(due)},
		{name: "within both: the smaller, both sent", m: warnedPolicy(day, hour), states: waitingAt(due), wantBefore: "1h0m0s", wantDue: due, wantSent: []string{"24h0m0s", "1h0m0s"}},
		{name: "sent for this due time", m: warnedPolicy(day, hour), states: waitingAt(due),
			stored: &status.Warned{Policy: "expire", Due: due, Before: []string{"24h0m0s", "1h0m0s"}}},
		{name: "sent for another due time: re-armed", m: warnedPolicy(day, hour), states: waitingAt(due),
			stored: &status.Warned{Policy: "expire", Due: due.Add(-time.Hour), Before: []string{"24h0m0s", "1h0m0s"}}, wantBefore: "1h0m0s", wantDue: due, wantSent: []string{"24h0m0s", "1h0m0s"}},
		{name: "the larger sent, the smaller crossed since", m: warnedPolicy(day, hour), states: waitingAt(due),
			stored: &status.Warned{Policy: "expire", Due: due, Before: []string{"24h0m0s"}}, wantBefore: "1h0m0s", wantDue: due, wantSent: []string{"24h0m0s", "1h0m0s"}},
		{name: "a hold past the due time moves it", m: warnedPolicy(hour), states: waitingAt(due), heldUntil: due.Add(20 * time.Minute),
			stored: &status.Warned{Policy: "expire", Due: due, Before: []string{"1h0m0s"}}, wantBefore: "1h0m0s", wantDue: due.Add(20 * time.Minute), wantSent: []string{"1h0m0s"}},
		{name: "a hold past the threshold keeps it from warning yet", m: warnedPolicy(hour), states: waitingAt(due), heldUntil: due.Add(2 * time.Hour)},
		{name: "held while it holds: due at the hold's end", m: warnedPolicy(hour), states: []policy.PolicyState{{Name: "expire", Holds: true}}, heldUntil: at.Add(10 * time.Minute),
			wantBefore: "1h0m0s", wantDue: at.Add(10 * time.Minute), wantSent: []string{"1h0m0s"}},
		{name: "a plan is not warned", m: warnedPolicy(hour), states: waitingAt(due), plan: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evaluator{Now: at}
			d := Decision{Entry: report.Entry{State: report.StateWaiting, Target: "preview-7"}}
			if tc.plan {
				d.Plan = &Plan{}
			}
			d = ev.warned(d, tc.m, Target{}, tc.states, tc.stored, tc.heldUntil)
			if tc.wantBefore == "" {
				if d.Warned != nil || d.Entry.Warning != nil {
					t.Fatalf("warned %+v, %+v; want nothing", d.Warned, d.Entry.Warning)
				}
				return
			}
			w := d.Entry.Warning
			if w == nil || w.Before != tc.wantBefore || !w.Due.Equal(tc.wantDue) || w.Policy != "expire" || w.Action != policy.ActionDelete {
				t.Fatalf("warning %+v, want %s before %s", w, tc.wantBefore, tc.wantDue)
			}
			if d.Warned == nil || d.Warned.Policy != "expire" || !d.Warned.Due.Equal(tc.wantDue) || !slices.Equal(d.Warned.Before, tc.wantSent) {
				t.Fatalf("record %+v, want %v sent for %s", d.Warned, tc.wantSent, tc.wantDue)
			}
		})
	}
}
