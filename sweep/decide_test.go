package sweep

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// Of a namespace's managers, only one that is active and valid shields it
// from rules.
func TestShielding(t *testing.T) {
	s := &Sweeper{}
	manager := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": policy.Group + "/" + policy.Version, "kind": policy.Kind,
			"metadata": map[string]any{"name": name, "namespace": "preview-7"},
			"spec":     spec,
		}}
	}
	policies := []any{map[string]any{"name": "later", "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(3600)}}, "action": map[string]any{"type": "DELETE"}}}
	dormant := manager("dormant", map[string]any{"namespace": "preview-7", "deactivated": true, "policies": policies})
	broken := manager("broken", map[string]any{"namespace": "preview-7", "policies": []any{}})
	active := manager("active", map[string]any{"namespace": "preview-7", "policies": policies})
	for _, tt := range []struct {
		name     string
		managers []*unstructured.Unstructured
		want     string
	}{
		{"none", nil, ""},
		{"deactivated", []*unstructured.Unstructured{dormant}, ""},
		{"invalid", []*unstructured.Unstructured{broken}, ""},
		{"deactivated, invalid and active", []*unstructured.Unstructured{dormant, broken, active}, "preview-7/active"},
	} {
		r := &sweepRun{governed: map[string][]governor{}}
		for _, obj := range tt.managers {
			s.noteGoverned(r, obj)
		}
		if got := shielding(r.governed["preview-7"]); got != tt.want {
			t.Errorf("%s: shielding = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestDeactivatedParsedOnce: a sweep parses a deactivated manager once,
// to evaluate it; noting whether it shields its namespace from rules reads
// spec.deactivated alone.
func TestDeactivatedParsedOnce(t *testing.T) {
	parses := map[string]int{}
	defer func(parse func(*unstructured.Unstructured) (policy.Manager, field.ErrorList)) { parseManager = parse }(parseManager)
	parseManager = func(obj *unstructured.Unstructured) (policy.Manager, field.ErrorList) {
		parses[obj.GetName()]++
		return policy.Parse(obj)
	}
	dormant := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policy.Group + "/" + policy.Version, "kind": policy.Kind,
		"metadata": map[string]any{"name": "dormant", "namespace": "preview-7"},
		"spec": map[string]any{"namespace": "preview-7", "deactivated": true, "policies": []any{map[string]any{
			"name": "later", "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(3600)}}, "action": map[string]any{"type": "DELETE"},
		}}},
	}}
	s := &Sweeper{}
	r := &sweepRun{governed: map[string][]governor{}}
	s.noteGoverned(r, dormant)
	d := s.evaluateManager(t.Context(), r, dormant, status.Status{})
	if d.entry.State != report.StateDeactivated || shielding(r.governed["preview-7"]) != "" || len(r.governed["preview-7"]) != 1 {
		t.Errorf("entry %+v, governors %+v: want it deactivated, noted as a governor that does not shield", d.entry, r.governed)
	}
	if parses["dormant"] != 1 {
		t.Errorf("parsed %d times in a sweep, want once", parses["dormant"])
	}
}

// A WEBHOOK that failed backs off 1m, 2m, 4m, … up to an hour.
func TestWebhookBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{
		0: time.Minute, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 6: 32 * time.Minute,
		7: time.Hour, 8: time.Hour, 1000: time.Hour,
	} {
		if got := webhookBackoff(n); got != want {
			t.Errorf("webhookBackoff(%d) = %s, want %s", n, got, want)
		}
	}
}

// A failure is told once: a deferral is no failure told, but one after a
// failure keeps it told.
func TestFailedBefore(t *testing.T) {
	p := &plan{policy: policy.Policy{Name: "report"}}
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
	p := &plan{policy: policy.Policy{Name: "report", Action: policy.Action{Type: policy.ActionWebhook}}}
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
		_, o := (&Sweeper{}).outcomeOf(report.Entry{}, p, tt.err, now, prev)
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

// Every policy's ignored annotation is said, each once.
func TestIgnoredAnnotationSaysEach(t *testing.T) {
	got := ignoredAnnotation([]policy.PolicyState{{Problem: "expiry: x"}, {}, {Problem: "touched: y"}, {Problem: "expiry: x"}})
	if want := "expiry: x; touched: y"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
