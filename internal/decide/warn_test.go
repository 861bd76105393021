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
		// The report says the threshold as users write it; the record keeps
		// it as Go prints it, which earlier records were written in.
		{name: "within a day", m: warnedPolicy(36 * hour), states: waitingAt(due), wantBefore: "1d12h", wantDue: due, wantSent: []string{"36h0m0s"}},
		{name: "within both: the smaller, both sent", m: warnedPolicy(day, hour), states: waitingAt(due), wantBefore: "1h", wantDue: due, wantSent: []string{"24h0m0s", "1h0m0s"}},
		{name: "sent for this due time", m: warnedPolicy(day, hour), states: waitingAt(due),
			stored: &status.Warned{Policy: "expire", Due: due, Before: []string{"24h0m0s", "1h0m0s"}}},
		{name: "sent for another due time: re-armed", m: warnedPolicy(day, hour), states: waitingAt(due),
			stored: &status.Warned{Policy: "expire", Due: due.Add(-time.Hour), Before: []string{"24h0m0s", "1h0m0s"}}, wantBefore: "1h", wantDue: due, wantSent: []string{"24h0m0s", "1h0m0s"}},
		{name: "the larger sent, the smaller crossed since", m: warnedPolicy(day, hour), states: waitingAt(due),
			stored: &status.Warned{Policy: "expire", Due: due, Before: []string{"24h0m0s"}}, wantBefore: "1h", wantDue: due, wantSent: []string{"24h0m0s", "1h0m0s"}},
		{name: "a hold past the due time moves it", m: warnedPolicy(hour), states: waitingAt(due), heldUntil: due.Add(20 * time.Minute),
			stored: &status.Warned{Policy: "expire", Due: due, Before: []string{"1h0m0s"}}, wantBefore: "1h", wantDue: due.Add(20 * time.Minute), wantSent: []string{"1h0m0s"}},
		{name: "a hold past the threshold keeps it from warning yet", m: warnedPolicy(hour), states: waitingAt(due), heldUntil: due.Add(2 * time.Hour)},
		{name: "held while it holds: due at the hold's end", m: warnedPolicy(hour), states: []policy.PolicyState{{Name: "expire", Holds: true}}, heldUntil: at.Add(10 * time.Minute),
			wantBefore: "1h", wantDue: at.Add(10 * time.Minute), wantSent: []string{"1h0m0s"}},
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

// twoWarned is a manager whose two policies warn an hour before they act:
// "scale", a stage, then "expire".
func twoWarned() policy.Manager {
	return policy.Manager{Policies: []policy.Policy{
		{Name: "scale", Action: policy.Action{Type: policy.ActionScaleDown}, WarnBefore: []time.Duration{time.Hour}},
		{Name: "expire", Action: policy.Action{Type: policy.ActionDelete}, WarnBefore: []time.Duration{time.Hour}},
	}}
}

// Of two policies due within a threshold, sweeps warn of the one due
// soonest only, once: the other's warning would overwrite its record, and
// the next sweep would warn of it again, and so on.
func TestWarnedTwoPoliciesOnce(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		states     []policy.PolicyState
		wantPolicy string
	}{
		{name: "the first due first", states: []policy.PolicyState{{Name: "scale", Due: at.Add(20 * time.Minute)}, {Name: "expire", Due: at.Add(40 * time.Minute)}}, wantPolicy: "scale"},
		{name: "the second due first", states: []policy.PolicyState{{Name: "scale", Due: at.Add(40 * time.Minute)}, {Name: "expire", Due: at.Add(20 * time.Minute)}}, wantPolicy: "expire"},
		{name: "due together: the first", states: []policy.PolicyState{{Name: "scale", Due: at.Add(20 * time.Minute)}, {Name: "expire", Due: at.Add(20 * time.Minute)}}, wantPolicy: "scale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stored *status.Warned
			var warned []string
			for sweep := range 4 {
				ev := &Evaluator{Now: at.Add(time.Duration(sweep) * time.Minute)}
				d := ev.warned(Decision{Entry: report.Entry{State: report.StateWaiting}}, twoWarned(), Target{}, tc.states, stored, time.Time{})
				if d.Entry.Warning != nil {
					warned = append(warned, d.Entry.Warning.Policy)
					stored = d.Warned
				}
			}
			if !slices.Equal(warned, []string{tc.wantPolicy}) {
				t.Fatalf("four sweeps warned of %v, want of %q once", warned, tc.wantPolicy)
			}
		})
	}
}

// The policy due later is warned of once the one due sooner has acted (a
// stage fired: it has no due time, held or not) or its due time moved past
// the other's; and not while the one due sooner is not within a threshold.
func TestWarnedWhatHappensNext(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	soon, later := at.Add(20*time.Minute), at.Add(40*time.Minute)
	toldOfScale := &status.Warned{Policy: "scale", Due: soon, Before: []string{"1h0m0s"}}
	fired := policy.PolicyState{Name: "scale", Detail: "fired already in this generation"}
	for _, tc := range []struct {
		name       string
		states     []policy.PolicyState
		heldUntil  time.Time
		wantPolicy string
		wantDue    time.Time
	}{
		{name: "the stage fired", states: []policy.PolicyState{fired, {Name: "expire", Due: later}}, wantPolicy: "expire", wantDue: later},
		{name: "the stage fired, held", states: []policy.PolicyState{fired, {Name: "expire", Due: later}}, heldUntil: at.Add(10 * time.Minute), wantPolicy: "expire", wantDue: later},
		{name: "its due time moved past", states: []policy.PolicyState{{Name: "scale", Due: at.Add(50 * time.Minute)}, {Name: "expire", Due: later}}, wantPolicy: "expire", wantDue: later},
		{name: "told, still due first", states: []policy.PolicyState{{Name: "scale", Due: soon}, {Name: "expire", Due: later}}},
		{name: "due first, not within its threshold", states: []policy.PolicyState{{Name: "scale", Due: at.Add(2 * time.Hour)}, {Name: "expire", Due: at.Add(3 * time.Hour)}}},
		{name: "a hold moves both to its end: the first", states: []policy.PolicyState{{Name: "scale", Due: soon}, {Name: "expire", Due: later}}, heldUntil: at.Add(45 * time.Minute),
			wantPolicy: "scale", wantDue: at.Add(45 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evaluator{Now: at}
			d := ev.warned(Decision{Entry: report.Entry{State: report.StateWaiting}}, twoWarned(), Target{}, tc.states, toldOfScale, tc.heldUntil)
			w := d.Entry.Warning
			if tc.wantPolicy == "" {
				if w != nil || d.Warned != nil {
					t.Fatalf("warned %+v; want nothing", w)
				}
				return
			}
			if w == nil || w.Policy != tc.wantPolicy || !w.Due.Equal(tc.wantDue) || d.Warned == nil || d.Warned.Policy != tc.wantPolicy {
				t.Fatalf("warned %+v, record %+v; want of %q due %s", w, d.Warned, tc.wantPolicy, tc.wantDue)
			}
		})
	}
}
