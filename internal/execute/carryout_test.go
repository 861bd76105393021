package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// stopped is an executor whose sweep was interrupted.
func stopped(x *Executor) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x.Stop = ctx
}

// frozenUntil is when the freeze of the frozen executors ends.
var frozenUntil = sweepNow.Add(3 * time.Hour)

func frozen(x *Executor) { x.Frozen, x.FrozenUntil = true, frozenUntil }

func maxActions(n int) func(*Executor) { return func(x *Executor) { x.MaxActions = n } }

// CarryOut does what a decision says, or why not, records it when it must,
// and tells the sink what became of the subject, once.
func TestCarryOut(t *testing.T) {
	deferredErr := fmt.Errorf("receiver silent: %w", webhook.ErrDeferred)
	for _, tt := range []struct {
		name     string
		x        []func(*Executor)
		d        decide.Decision
		writeErr error
		silent   error
		// want: the entry's state and a part of its message ("" any), its
		// due time (zero: none), the record's writes and the DELETEs sent,
		// and what the sink was told.
		state           report.State
		message         string
		due             time.Time
		writes, deletes int
		acted, recorded bool
		// kept is the state the record keeps, when not the entry's.
		kept report.State
	}{
		{name: "untouched: nothing written", d: decision(untouched),
			state: report.StateWaiting, recorded: true},
		{name: "no plan: the entry saved", d: decision(noPlan),
			state: report.StateWaiting, writes: 1, recorded: true},
		{name: "no plan, the record changed since listed: busy", d: decision(noPlan), writeErr: fmt.Errorf("manager team-a/m %w", write.ErrChanged),
			state: report.StateBusy, message: "changed since this sweep listed it; left to the next sweep", writes: 1},
		{name: "no plan, the write fails: failed", d: decision(noPlan), writeErr: errors.New("etcd is down"),
			state: report.StateFailed, message: "record the outcome: etcd is down", writes: 1},
		{name: "deactivate, fired before: deactivated", d: decision(step(decide.StepDeactivate)),
			state: report.StateDeactivated, message: "expired", writes: 1, recorded: true, kept: report.StateFired},
		{name: "deactivate, the record changed: busy", d: decision(step(decide.StepDeactivate)), writeErr: write.ErrChanged,
			state: report.StateBusy, writes: 1},
		{name: "confirm a DELETE whose answer was lost", d: decision(step(decide.StepConfirmDelete)),
			state: report.StateFired, message: "expired", writes: 1, recorded: true},
		{name: "frozen: waiting until the freeze ends", x: []func(*Executor){frozen, maxActions(1)}, d: decision(granted),
			state: report.StateWaiting, message: "expired; frozen until 2026-11-28T11:00:00Z (--freeze)", due: frozenUntil, writes: 1, recorded: true},
		{name: "frozen: a claim to complete is left as it is", x: []func(*Executor){frozen}, d: decision(step(decide.StepCompleteClaim)),
			state: report.StateWaiting, due: frozenUntil, recorded: true},
		{name: "interrupted: no action starts", x: []func(*Executor){stopped}, d: decision(),
			state: report.StateDeferred, message: "the sweep was interrupted before it acted", recorded: true},
		{name: "interrupted, with no place under --max-actions: nothing recorded", x: []func(*Executor){stopped, maxActions(1)}, d: decision(),
			state: report.StateDeferred, message: "the sweep was interrupted before it acted", recorded: true},
		{name: "a receiver silent earlier in the sweep: deferred, backing off", d: decision(webhookTo("http://hooks.example.com/x"), rule), silent: deferredErr,
			state: report.StateDeferred, message: "webhook: receiver silent", due: sweepNow.Add(time.Minute), writes: 1, recorded: true},
		{name: "a receiver silent, but no webhook: acts", d: decision(), silent: deferredErr,
			state: report.StateFired, message: "expired", deletes: 1, acted: true, recorded: true},
		{name: "--max-actions without a place: deferred", x: []func(*Executor){maxActions(2)}, d: decision(),
			state: report.StateDeferred, message: "expired; deferred: --max-actions 2 reached", writes: 1, recorded: true},
		{name: "--max-actions with a place: acts", x: []func(*Executor){maxActions(2)}, d: decision(granted),
			state: report.StateFired, message: "expired", deletes: 1, acted: true, recorded: true},
		{name: "acting", d: decision(),
			state: report.StateFired, message: "expired", deletes: 1, acted: true, recorded: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.done, w.silent = report.StateFired, tt.silent
			x := newExecutor(t, w, emptyReader(t))
			for _, mod := range tt.x {
				mod(x)
			}
			rec := &fakeRecord{writeErr: tt.writeErr}
			e := x.CarryOut(t.Context(), rec, tt.d)
			if e.State != tt.state || !strings.Contains(e.Message, tt.message) {
				t.Errorf("entry %s %q, want %s %q", e.State, e.Message, tt.state, tt.message)
			}
			if due := e.Due; tt.due.IsZero() && due != nil || !tt.due.IsZero() && (due == nil || !due.Equal(tt.due)) {
				t.Errorf("due %v, want %v", due, tt.due)
			}
			if len(rec.writes) != tt.writes || len(w.deletes) != tt.deletes || len(rec.claims) != 0 {
				t.Errorf("%d writes, %d DELETEs, %d claims; want %d, %d, none", len(rec.writes), len(w.deletes), len(rec.claims), tt.writes, tt.deletes)
			}
			kept := tt.kept
			if kept == "" {
				kept = e.State
			}
			if len(rec.writes) > 0 && tt.writeErr == nil && rec.writes[0].Entry.State != kept {
				t.Errorf("recorded %s, want %s", rec.writes[0].Entry.State, kept)
			}
			if got := rec.sink.told; len(got) != 1 || got[0].entry.State != e.State || got[0].entry.Message != e.Message || got[0].acted != tt.acted || got[0].recorded != tt.recorded {
				t.Errorf("sink told %+v; want once, of %s, acted %t, recorded %t", got, e.State, tt.acted, tt.recorded)
			}
		})
	}
}

// What finish records: a deactivation is the action done before (its
// effect says so), a confirmed DELETE the DELETE itself, as fired now; a
// dry run's deactivation stays planned.
func TestFinish(t *testing.T) {
	for _, tt := range []struct {
		name   string
		step   decide.Step
		done   report.State
		state  report.State
		effect string
		last   bool
	}{
		{"deactivate", decide.StepDeactivate, report.StateFired, report.StateDeactivated, "DELETE succeeded before; nothing left to do", false},
		{"deactivate, dry", decide.StepDeactivate, "", report.StatePlanned, "DELETE succeeded before; nothing left to do", false},
		{"confirm delete", decide.StepConfirmDelete, report.StateFired, report.StateFired, "delete namespace team-a (gone after it)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFakeWriter()
			w.done = tt.done
			x := newExecutor(t, w, emptyReader(t))
			rec := &fakeRecord{}
			d := decision(step(tt.step))
			e, recorded := x.finish(t.Context(), rec, d.Plan, d.Entry)
			if e.State != tt.state || len(e.Effects) != 1 || e.Effects[0] != tt.effect || !recorded {
				t.Errorf("%s %q, recorded %t; want %s %q, recorded", e.State, e.Effects, recorded, tt.state, tt.effect)
			}
			if len(rec.writes) != 1 || !rec.writes[0].Done || (rec.writes[0].Last != nil) != tt.last {
				t.Fatalf("writes %+v; want one, done, with a last action %t", rec.writes, tt.last)
			}
			if l := rec.writes[0].Last; l != nil && (l.Result != report.ResultSucceeded || l.TargetUID != "ns-uid" || !l.Time.Equal(sweepNow)) {
				t.Errorf("last action %+v; want succeeded on ns-uid at the sweep's time", l)
			}
		})
	}
}
