package execute

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// A failure is told once: a deferral is no failure told, but one after a
// failure keeps it told.
func TestFailedBefore(t *testing.T) {
	p := &decide.Plan{Policy: policy.Policy{Name: "report"}}
	for _, tt := range []struct {
		name string
		last *status.LastAction
		want bool
	}{
		{"nothing before", nil, false},
		{"a success", &status.LastAction{Policy: "report", Result: report.ResultSucceeded}, false},
		{"a failure", &status.LastAction{Policy: "report", Result: report.ResultFailed, Failures: 1}, true},
		{"another policy's failure", &status.LastAction{Policy: "other", Result: report.ResultFailed, Failures: 1}, false},
		{"a deferral alone", &status.LastAction{Policy: "report", Result: report.ResultFailed, Deferred: true}, false},
		{"a deferral after a failure", &status.LastAction{Policy: "report", Result: report.ResultFailed, Deferred: true, Failures: 1}, true},
	} {
		if got := failedBefore(tt.last, p); got != tt.want {
			t.Errorf("%s: failedBefore = %t, want %t", tt.name, got, tt.want)
		}
	}
}

// A WEBHOOK that failed or was deferred backs off; one whose Service could
// not be read (no receiver tried) backs off nothing, and keeps the
// failures in a row before it, unless RBAC refused the read: that lasts.
func TestWebhookOutcomeBacksOff(t *testing.T) {
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	p := &decide.Plan{Policy: policy.Policy{Name: "report", Action: policy.Action{Type: policy.ActionWebhook}}}
	prev := &status.LastAction{Policy: "report", Action: policy.ActionWebhook, Result: report.ResultFailed, Failures: 2}
	for _, tt := range []struct {
		name     string
		err      error
		failures int
		next     time.Duration // 0: no next attempt recorded
		deferred bool
	}{
		{"a failure", errors.New("webhook http://sink: timed out"), 3, 4 * time.Minute, false},
		{"a deferral", fmt.Errorf("webhook: %w", webhook.ErrDeferred), 2, 2 * time.Minute, true},
		{"the Service unread", &unreadService{name: "sink"}, 2, 0, false},
		{"the Service forbidden to read", &unreadService{name: "sink", lasting: true}, 3, 4 * time.Minute, false},
		{"the Service unread again before a retry", tenantError{summary: "failed: the Service sink could not be read", err: fmt.Errorf("webhook http://sink.team-a.svc: %w", &unreadService{name: "sink"})}, 2, 0, false},
	} {
		_, o := (&Executor{}).outcomeOf(report.Entry{}, p, tt.err, now, now, prev)
		last := o.Last
		var next time.Duration
		if last.NextAttempt != nil {
			next = last.NextAttempt.Sub(now)
		}
		if last.Result != report.ResultFailed || last.Failures != tt.failures || next != tt.next || last.Deferred != tt.deferred {
			t.Errorf("%s: %+v; want failed, %d failures, next attempt in %s, deferred %t", tt.name, last, tt.failures, tt.next, tt.deferred)
		}
	}
}
