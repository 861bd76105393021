package execute

import (
	"context"
	"fmt"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// action is an action type's home in the executor: what carrying it out
// takes beyond what the executor does for every action alike (dry runs,
// --max-actions, claims, records, notifications, Events). Its pure
// properties are policy's (policy.ActionKind). Each is registered once, in
// actions.
type action interface {
	// deferral is why plan p's action of manager m may not start in this
	// sweep, which defers it with no claim and no place under
	// --max-actions; nil when it may.
	deferral(x *Executor, m policy.Manager, p *decide.Plan) error
	// before reads, ahead of the action and within bounds of its own, what
	// it will free; unknown says why that is not known (the action goes
	// ahead). Both nil when it reads nothing.
	before(ctx context.Context, x *Executor, p *decide.Plan) (freed *report.Reclaimed, unknown error)
	// apply carries out plan p's action for manager m through x's writer
	// and returns what it did (would do, dry); rec is the subject's record
	// and freed what before read.
	apply(ctx context.Context, x *Executor, m policy.Manager, rec record.Record, p *decide.Plan, freed *report.Reclaimed) (applied, error)
	// failed completes last, the record of the action that failed with
	// err and ended at ended, prev being the last action recorded before,
	// and returns its entry e as it then reads.
	failed(e report.Entry, last, prev *status.LastAction, err error, ended time.Time) report.Entry
	// keep sets in o the state plan p's action leaves, done or failed with
	// err at the sweep's time now, when the action keeps one.
	keep(o *record.Outcome, p *decide.Plan, err error, now time.Time)
}

// actions are the executor's side of the action types, registered once,
// by type.
var actions = map[string]action{
	policy.ActionDelete:    deleteAction{},
	policy.ActionScaleDown: scaleDownAction{},
	policy.ActionSleep:     sleepAction{},
	policy.ActionWebhook:   webhookAction{},
}

// actionOf is the executor's side of the action of type typ; for a type
// none has, one whose apply fails.
func actionOf(typ string) action {
	if a, ok := actions[typ]; ok {
		return a
	}
	return unknownAction{typ: typ}
}

// common is what an action does where it needs nothing of its own: it
// starts at once, reads nothing before, records a failure as it is and
// keeps no state.
type common struct{}

func (common) deferral(*Executor, policy.Manager, *decide.Plan) error { return nil }

func (common) before(context.Context, *Executor, *decide.Plan) (*report.Reclaimed, error) {
	return nil, nil
}

func (common) failed(e report.Entry, _, _ *status.LastAction, _ error, _ time.Time) report.Entry {
	return e
}

func (common) keep(*record.Outcome, *decide.Plan, error, time.Time) {}

// leftAlone is what an action (what it does) on target t's workloads
// does once the namespace its claim was made for is gone: nothing.
func leftAlone(what string, t decide.Target) applied {
	return applied{effects: []string{what + " in namespace " + t.Name + ": the namespace the claim was made for is gone; the new one of that name is left alone"}}
}

// unknownAction is a type no action has, which the parser refuses.
type unknownAction struct {
	common
	typ string
}

func (u unknownAction) apply(context.Context, *Executor, policy.Manager, record.Record, *decide.Plan, *report.Reclaimed) (applied, error) {
	return applied{}, fmt.Errorf("unknown action %q", u.typ)
}
