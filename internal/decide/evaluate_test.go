package decide

import (
	"testing"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Of a namespace's managers, only one that is active and valid shields it
// from rules.
func TestShielding(t *testing.T) {
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
		g := NewGovernors(nil)
		for _, obj := range tt.managers {
			g.Note(obj)
		}
		if got := g.Shielding("preview-7"); got != tt.want {
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
	g := NewGovernors(nil)
	g.Note(dormant)
	d := (&Evaluator{}).EvaluateManager(t.Context(), dormant, status.Status{}, nil)
	if d.Entry.State != report.StateDeactivated || g.Shielding("preview-7") != "" || len(g.byNamespace["preview-7"]) != 1 {
		t.Errorf("entry %+v, governors %+v: want it deactivated, noted as a governor that does not shield", d.Entry, g.byNamespace)
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
		if got := WebhookBackoff(n); got != want {
			t.Errorf("WebhookBackoff(%d) = %s, want %s", n, got, want)
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

// A condition's entry says when it came due while its windows were closed
// (for nsman due), and nothing of windows when they put nothing off.
func TestConditionsOutsideWindows(t *testing.T) {
	at := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	got := conditions([]policy.PolicyState{
		{Name: "closed", Due: at, Outside: at.Add(-8 * time.Hour)},
		{Name: "open", Due: at, Outside: at},
		{Name: "no windows", Due: at},
	})
	if c := got[0].OutsideWindows; c == nil || !c.Equal(at.Add(-8*time.Hour)) {
		t.Errorf("closed: outsideWindows %v, want 14:00", c)
	}
	if got[1].OutsideWindows != nil || got[2].OutsideWindows != nil {
		t.Errorf("open, no windows: %v, %v; want none", got[1].OutsideWindows, got[2].OutsideWindows)
	}
}
