package execute

import (
	"fmt"
	"testing"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// A decision takes a place under --max-actions only when an action is due
// and nothing else keeps it from starting.
func TestWantsPlace(t *testing.T) {
	hook := webhookTo("http://hooks.example.com/x")
	silent := fmt.Errorf("receiver silent: %w", webhook.ErrDeferred)
	for _, tt := range []struct {
		name   string
		x      []func(*Executor)
		d      decide.Decision
		silent error
		want   bool
	}{
		{name: "no --max-actions", d: decision()},
		{name: "untouched", x: []func(*Executor){maxActions(1)}, d: decision(untouched)},
		{name: "no plan", x: []func(*Executor){maxActions(1)}, d: decision(noPlan)},
		{name: "a deactivation", x: []func(*Executor){maxActions(1)}, d: decision(step(decide.StepDeactivate))},
		{name: "a DELETE confirmed", x: []func(*Executor){maxActions(1)}, d: decision(step(decide.StepConfirmDelete))},
		{name: "frozen", x: []func(*Executor){maxActions(1), frozen}, d: decision()},
		{name: "interrupted", x: []func(*Executor){maxActions(1), stopped}, d: decision()},
		{name: "a WEBHOOK to a receiver silent", x: []func(*Executor){maxActions(1)}, d: decision(hook), silent: silent},
		{name: "a WEBHOOK", x: []func(*Executor){maxActions(1)}, d: decision(hook), want: true},
		{name: "a DELETE, a receiver silent", x: []func(*Executor){maxActions(1)}, d: decision(), silent: silent, want: true},
		{name: "a claim to complete", x: []func(*Executor){maxActions(1)}, d: decision(step(decide.StepCompleteClaim)), want: true},
		{name: "a DELETE", x: []func(*Executor){maxActions(1)}, d: decision(), want: true},
		{name: "a namespace put back to sleep", x: []func(*Executor){maxActions(1)}, d: decision(sleeping(false), func(d *decide.Decision) { d.Plan.Resleep = true }), want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.silent = tt.silent
			x := newExecutor(t, w, emptyReader(t))
			for _, mod := range tt.x {
				mod(x)
			}
			if got := x.WantsPlace(tt.d); got != tt.want {
				t.Errorf("WantsPlace = %t, want %t", got, tt.want)
			}
		})
	}
}

// The places of --max-actions are offered as subjects are evaluated: one
// pushed out is carried out at once, deferred; the rest once every subject
// was offered one, granted, round-robin across namespaces.
func TestOfferAndGrant(t *testing.T) {
	for _, tt := range []struct {
		name     string
		max      int
		subjects [][2]string // namespace, manager
		// want is what became of each subject, in the order carried out.
		want []string
	}{
		{"places for all", 3, [][2]string{{"team-a", "m"}, {"team-b", "m"}},
			[]string{"team-a/m fired", "team-b/m fired"}},
		{"one namespace pushed out", 1, [][2]string{{"team-a", "m"}, {"team-b", "m"}},
			[]string{"team-b/m deferred", "team-a/m fired"}},
		{"one namespace's many take no more than another's one", 2, [][2]string{{"team-a", "m1"}, {"team-a", "m2"}, {"team-a", "m3"}, {"team-b", "m"}},
			[]string{"team-a/m3 deferred", "team-a/m2 deferred", "team-a/m1 fired", "team-b/m fired"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.done = report.StateFired
			x := newExecutor(t, w, emptyReader(t))
			x.MaxActions, x.Places = tt.max, NewFairShare(tt.max, "")
			var got []string
			var carried []report.Entry
			for _, s := range tt.subjects {
				d := decision(notHome, func(d *decide.Decision) {
					d.Manager.Namespace, d.Manager.Name, d.Entry.Namespace, d.Entry.Name, d.Entry.Target = s[0], s[1], s[0], s[1], s[0]
					d.Plan.Target.Name, d.Plan.Target.Listed.Name = s[0], s[0]
				})
				if !x.WantsPlace(d) {
					t.Fatalf("%s/%s wants no place", s[0], s[1])
				}
				x.Offer(d.Entry, func(granted bool) {
					d.Granted = granted
					e := x.CarryOut(t.Context(), &fakeRecord{}, d)
					got = append(got, e.Namespace+"/"+e.Name+" "+string(e.State))
					carried = append(carried, e)
				})
			}
			calls := 0
			x.Grant(func(n int, fn func(i int)) {
				calls++
				for i := range n {
					fn(i)
				}
			})
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || calls != 1 {
				t.Errorf("carried out %q in %d calls, want %q in one", got, calls, tt.want)
			}
			// One deferred would be deferred again, were it offered now.
			for _, e := range carried {
				if beyond := x.Places.BeyondCap(e); beyond != (e.State == report.StateDeferred) {
					t.Errorf("%s/%s %s: beyond the cap %t", e.Namespace, e.Name, e.State, beyond)
				}
			}
		})
	}
}
