package decide

import (
	"testing"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// progressManager is a manager of generation 3 and spec "spec-b", with a
// final WEBHOOK "notify" and a stage "warn".
var progressManager = policy.Manager{Generation: 3, Arming: "spec-b", Policies: []policy.Policy{
	{Name: "notify", Final: true, Action: policy.Action{Type: policy.ActionWebhook}},
	{Name: "warn", Final: false, Action: policy.Action{Type: policy.ActionWebhook}},
}}

// A WEBHOOK backs off while its record, of this spec, says its last
// delivery failed and its next attempt is ahead, but never further than
// the longest backoff (and the skew between two sweeps' clocks).
func TestBackingOff(t *testing.T) {
	failed := func(mut func(*status.Progress)) status.Progress {
		p := status.Progress{ObservedGeneration: 3, LastAction: &status.LastAction{Policy: "notify", Action: policy.ActionWebhook, Result: report.ResultFailed,
			Time: now.Add(-time.Minute), Failures: 2, NextAttempt: timeAt(2 * time.Minute)}}
		if mut != nil {
			mut(&p)
		}
		return p
	}
	next := func(d time.Duration) func(*status.Progress) {
		return func(p *status.Progress) { p.LastAction.NextAttempt = timeAt(d) }
	}
	tests := []struct {
		name     string
		progress status.Progress
		policy   string
		spec     string
		until    time.Time
		failures int
	}{
		{name: "next attempt ahead", progress: failed(nil), policy: "notify", until: now.Add(2 * time.Minute), failures: 2},
		{name: "next attempt now", progress: failed(next(0)), policy: "notify"},
		{name: "next attempt past", progress: failed(next(-time.Second)), policy: "notify"},
		{name: "at the longest backoff and the skew", progress: failed(next(MaxWebhookBackoff + status.ClaimSkew)), policy: "notify",
			until: now.Add(MaxWebhookBackoff + status.ClaimSkew), failures: 2},
		{name: "beyond the longest backoff and the skew: ignored", progress: failed(next(MaxWebhookBackoff + status.ClaimSkew + time.Second)), policy: "notify"},
		{name: "another policy's", progress: failed(nil), policy: "warn"},
		{name: "of another generation", progress: failed(func(p *status.Progress) { p.ObservedGeneration = 2 }), policy: "notify"},
		{name: "of another generation, the rule's spec", progress: failed(func(p *status.Progress) { p.ObservedGeneration = 2 }), policy: "notify", spec: "spec-b",
			until: now.Add(2 * time.Minute), failures: 2},
		{name: "of another generation and spec", progress: failed(func(p *status.Progress) { p.ObservedGeneration = 2 }), policy: "notify", spec: "spec-a"},
		{name: "after a deferral", progress: failed(func(p *status.Progress) { p.LastAction.Failures, p.LastAction.Deferred = 0, true }), policy: "notify",
			until: now.Add(2 * time.Minute)},
		{name: "after a success", progress: failed(func(p *status.Progress) { p.LastAction.Result = report.ResultSucceeded }), policy: "notify"},
		{name: "after a DELETE that failed", progress: failed(func(p *status.Progress) { p.LastAction.Action = policy.ActionDelete }), policy: "notify"},
		{name: "without a next attempt", progress: failed(func(p *status.Progress) { p.LastAction.NextAttempt = nil }), policy: "notify"},
		{name: "nothing done yet", progress: status.Progress{ObservedGeneration: 3}, policy: "notify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			until, failures := backingOff(tt.progress, progressManager, tt.policy, tt.spec, now)
			if !until.Equal(tt.until) || failures != tt.failures {
				t.Errorf("backing off until %v after %d failures, want %v after %d", until, failures, tt.until, tt.failures)
			}
		})
	}
}

// Done is a final policy's action that succeeded for this spec: a
// stage's, a failure, another spec's are not.
func TestDoneFor(t *testing.T) {
	last := func(policyName, result string, generation int64) status.Progress {
		return status.Progress{ObservedGeneration: generation, LastAction: &status.LastAction{Policy: policyName, Action: policy.ActionWebhook, Result: result, Time: now}}
	}
	tests := []struct {
		name     string
		progress status.Progress
		spec     string
		want     bool
	}{
		{name: "a final policy succeeded", progress: last("notify", report.ResultSucceeded, 3), want: true},
		{name: "a final policy failed", progress: last("notify", report.ResultFailed, 3)},
		{name: "a stage succeeded", progress: last("warn", report.ResultSucceeded, 3)},
		{name: "a policy gone succeeded", progress: last("gone", report.ResultSucceeded, 3)},
		{name: "succeeded in another generation", progress: last("notify", report.ResultSucceeded, 2)},
		{name: "succeeded in another generation of the rule's spec", progress: last("notify", report.ResultSucceeded, 2), spec: "spec-b", want: true},
		{name: "succeeded under another spec", progress: last("notify", report.ResultSucceeded, 2), spec: "spec-a"},
		{name: "nothing done", progress: status.Progress{ObservedGeneration: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := doneFor(tt.progress, progressManager, tt.spec); got != tt.want {
				t.Errorf("done %t, want %t", got, tt.want)
			}
		})
	}
}

// A record is of a manager's spec by its generation, or by the rule's
// spec it carries; an empty spec matches none, a manager's included.
func TestSameSpec(t *testing.T) {
	manager := policy.Manager{Generation: 3}
	tests := []struct {
		name       string
		m          policy.Manager
		generation int64
		spec       string
		want       bool
	}{
		{name: "the generation", m: progressManager, generation: 3, want: true},
		{name: "another generation", m: progressManager, generation: 2},
		{name: "another generation, the spec", m: progressManager, generation: 2, spec: "spec-b", want: true},
		{name: "another generation and spec", m: progressManager, generation: 2, spec: "spec-a"},
		{name: "the generation, another spec", m: progressManager, generation: 3, spec: "spec-a", want: true},
		{name: "a manager without a spec, another generation", m: manager, generation: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameSpec(tt.m, tt.generation, tt.spec); got != tt.want {
				t.Errorf("same spec %t, want %t", got, tt.want)
			}
		})
	}
}
