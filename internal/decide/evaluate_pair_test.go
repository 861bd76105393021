package decide

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// A rule's record of a namespace lives on it, and carries the rule's
// spec (Arming): what the record says holds across generations that only
// pause and resume the rule, and no longer once the spec changes.
func TestEvaluatePair(t *testing.T) {
	expire := newRule(t)
	notify := newRule(t, pol("notify", ttl(3600), webhookAction))
	stages := newRule(t, map[string]any{"name": "warn", "final": false, "condition": ttl(3600), "action": webhookAction}, pol("expire", ttl(3*3600), deleteAction))
	// record is a pair's record written in generation 2 of the rule, under
	// spec (the rule's own when "").
	record := func(m policy.Manager, spec string, p status.Progress) status.PairStatus {
		if spec == "" {
			spec = m.Arming
		}
		p.ObservedGeneration = 2
		return status.PairStatus{Rule: trusted + "/previews", Progress: p, Spec: spec}
	}
	// claim is a claim made in generation 2 of the rule, under spec.
	claim := func(spec string, expires time.Duration, u string) status.Progress {
		return status.Progress{Claim: &status.Claim{Policy: "expire", Action: policy.ActionDelete, Sweep: "sweep-a", Expires: now.Add(expires), Generation: 2, TargetUID: types.UID(u), Spec: spec}}
	}
	last := func(policyName, action, result string, uncertain bool) status.Progress {
		return status.Progress{LastAction: &status.LastAction{Policy: policyName, Action: action, Result: result, Time: now.Add(-30 * time.Minute), Uncertain: uncertain}}
	}
	fires := func(policyName string) want {
		return want{policy: policyName, plan: &wantPlan{step: StepAct, policy: policyName, generation: 4, reason: "TTL 1h elapsed at 2026-11-23T11:00:00Z", name: target, uid: "ns-uid-1", home: true}}
	}
	complete := func(u string, home, recreated bool) want {
		return want{policy: "expire", plan: &wantPlan{step: StepCompleteClaim, policy: "expire", generation: 2, reason: "completing the expired claim of sweep sweep-a",
			name: target, uid: types.UID(u), home: home, recreated: recreated}}
	}
	backingOff := last("notify", policy.ActionWebhook, report.ResultFailed, false)
	backingOff.LastAction.Failures, backingOff.LastAction.NextAttempt = 2, timeAt(2*time.Minute)
	warned := last("warn", policy.ActionWebhook, report.ResultSucceeded, false)
	warned.Fired = []status.FiredPolicy{{Policy: "warn", Generation: 2, Time: now.Add(-30 * time.Minute), Spec: stages.Arming}}
	terminatingNS := targetNS(terminating)
	tests := []struct {
		name     string
		rule     policy.Manager
		ns       cluster.Namespace
		stored   status.PairStatus
		ruleHold string
		want     want
	}{
		{name: "a live claim", rule: expire, ns: targetNS(), stored: record(expire, "", claim(expire.Arming, time.Minute, "ns-uid-1")),
			want: want{state: report.StateBusy, msg: "claimed by sweep sweep-a until 2026-11-23T12:01:00Z", policy: "expire", untouched: true}},
		{name: "an expired claim under the rule's spec", rule: expire, ns: targetNS(), stored: record(expire, "", claim(expire.Arming, -time.Minute, "ns-uid-1")), want: complete("ns-uid-1", true, false)},
		{name: "an expired claim under the rule's spec, the namespace recreated", rule: expire, ns: targetNS(), stored: record(expire, "", claim(expire.Arming, -time.Minute, "ns-uid-0")), want: complete("ns-uid-0", false, true)},
		{name: "an expired claim under another spec: void", rule: expire, ns: targetNS(), stored: record(expire, "an-older-spec", claim("an-older-spec", -time.Minute, "ns-uid-1")), want: fires("expire")},
		{name: "done until the rule changes", rule: notify, ns: targetNS(), stored: record(notify, "", last("notify", policy.ActionWebhook, report.ResultSucceeded, false)),
			want: want{state: report.StateDone, msg: `policy "notify" fired (WEBHOOK) at 2026-11-23T11:30:00Z; done until the rule changes`, policy: "notify", untouched: true}},
		{name: "done under another spec", rule: notify, ns: targetNS(), stored: record(notify, "an-older-spec", last("notify", policy.ActionWebhook, report.ResultSucceeded, false)),
			want: fires("notify")},
		{name: "a DELETE's answer lost under the rule's spec", rule: expire, ns: terminatingNS, stored: record(expire, "", last("expire", policy.ActionDelete, report.ResultFailed, true)),
			want: want{policy: "expire", plan: &wantPlan{step: StepConfirmDelete, policy: "expire", generation: 4, reason: "namespace preview-7 went after a DELETE whose answer was lost",
				name: target, uid: "ns-uid-1", going: true, home: true}}},
		{name: "a DELETE's answer lost under another spec", rule: expire, ns: terminatingNS, stored: record(expire, "an-older-spec", last("expire", policy.ActionDelete, report.ResultFailed, true)),
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating", untouched: true}},
		{name: "terminating", rule: expire, ns: terminatingNS,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating", untouched: true}},
		{name: "a TTL that fires", rule: expire, ns: targetNS(), want: fires("expire")},
		{name: "held by the rule", rule: expire, ns: targetNS(), ruleHold: at(time.Hour),
			want: want{state: report.StateWaiting, msg: `policy "expire" holds, but rule nsman/previews is held until 2026-11-23T13:00:00Z`, due: timeAt(time.Hour), heldUntil: timeAt(time.Hour)}},
		{name: "held by the namespace", rule: expire, ns: targetNS(nsHold(2 * time.Hour)), ruleHold: at(time.Hour),
			want: want{state: report.StateWaiting, msg: `policy "expire" holds, but namespace preview-7 is held until 2026-11-23T14:00:00Z`, due: timeAt(2 * time.Hour), heldUntil: timeAt(2 * time.Hour)}},
		{name: "the rule's hold unparseable", rule: expire, ns: targetNS(), ruleHold: "tomorrow",
			want: func() want {
				w := fires("expire")
				w.msg = `; hold ignored: nsman.k8s.consol.de/hold-until on rule nsman/previews is not an RFC 3339 time ("tomorrow")`
				return w
			}()},
		{name: "a WEBHOOK backing off under the rule's spec", rule: notify, ns: targetNS(), stored: record(notify, "", backingOff),
			want: want{state: report.StateDeferred, msg: "the webhook backs off after 2 failed deliveries in a row: next attempt at 2026-11-23T12:02:00Z", policy: "notify", due: timeAt(2 * time.Minute), untouched: true}},
		{name: "a WEBHOOK backing off under another spec", rule: notify, ns: targetNS(), stored: record(notify, "an-older-spec", backingOff), want: fires("notify")},
		{name: "a stage fired under the rule's spec is skipped", rule: stages, ns: targetNS(), stored: record(stages, "", warned),
			want: want{state: report.StateWaiting, msg: "fired already in this generation; TTL 3h elapses at 2026-11-23T13:00:00Z", due: timeAt(time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evaluator{Now: now, Clock: func() time.Time { return now }, ClaimTTL: 5 * time.Minute, MaxHold: DefaultMaxHold, Trusted: []string{trusted},
				Namespaces: func(context.Context) (map[string]cluster.Namespace, error) {
					return nil, errors.New("a pair is evaluated on the namespace it is given")
				},
				Activity: &fakeActivity{}, Stuck: fakeStuck{}, Budget: &fakeBudget{}}
			var pods fakeCheck
			e := report.Entry{Namespace: trusted, Name: "previews", Rule: true, Target: tt.ns.Name}
			d := ev.EvaluatePair(t.Context(), tt.rule, tt.ns, tt.stored, e, pods.check, Hold{On: "rule " + tt.rule.Namespace + "/" + tt.rule.Name, Value: tt.ruleHold})
			checkDecision(t, d, tt.want)
			if !d.Entry.Rule || d.Entry.Target != target || len(pods.asked) != 0 {
				t.Errorf("entry %+v, pods checked in %v: want the rule's entry for %s, no pods checked", d.Entry, pods.asked, target)
			}
		})
	}
}
