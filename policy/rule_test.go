package policy

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// mustSelector parses a selector in kubectl's -l syntax.
func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("selector %q: %v", s, err)
	}
	return sel
}

func TestRuleMatches(t *testing.T) {
	ci := map[string]string{"ci": "e2e"}
	tests := []struct {
		name     string
		selector string // kubectl's -l syntax; "" for no selector
		patterns []string
		ns       string
		labels   map[string]string
		want     bool
	}{
		// Selector only: the name does not matter.
		{name: "selector: label matches", selector: "ci=e2e", ns: "anything", labels: ci, want: true},
		{name: "selector: among other labels", selector: "ci=e2e", ns: "anything", labels: map[string]string{"ci": "e2e", "team": "web"}, want: true},
		{name: "selector: other value", selector: "ci=e2e", ns: "e2e-1", labels: map[string]string{"ci": "unit"}},
		{name: "selector: no labels", selector: "ci=e2e", ns: "e2e-1"},
		{name: "selector: set-based, matches", selector: "team in (qa,web),!keep", ns: "x", labels: map[string]string{"team": "qa"}, want: true},
		{name: "selector: set-based, kept", selector: "team in (qa,web),!keep", ns: "x", labels: map[string]string{"team": "qa", "keep": ""}},

		// Patterns only: the labels do not matter.
		{name: "pattern: prefix", patterns: []string{"e2e-*"}, ns: "e2e-4711", want: true},
		{name: "pattern: the prefix alone", patterns: []string{"e2e-*"}, ns: "e2e-", want: true},
		{name: "pattern: whole name, not a part", patterns: []string{"e2e-*"}, ns: "pre-e2e-1"},
		{name: "pattern: other name", patterns: []string{"e2e-*"}, ns: "pr-42", labels: ci},
		{name: "pattern: class", patterns: []string{"pr-[0-9]*"}, ns: "pr-42", want: true},
		{name: "pattern: class does not match", patterns: []string{"pr-[0-9]*"}, ns: "pr-x42"},
		{name: "pattern: one character", patterns: []string{"run-?"}, ns: "run-7", want: true},
		{name: "pattern: one character, not two", patterns: []string{"run-?"}, ns: "run-77"},
		{name: "pattern: escaped star is literal", patterns: []string{`e2e-\*`}, ns: "e2e-1"},
		{name: "pattern: exact name", patterns: []string{"preview"}, ns: "preview", want: true},
		{name: "patterns: any one suffices", patterns: []string{"e2e-*", "pr-[0-9]*"}, ns: "pr-7", want: true},
		{name: "patterns: none matches", patterns: []string{"e2e-*", "pr-[0-9]*"}, ns: "staging"},

		// Both: a namespace must satisfy the selector and a pattern.
		{name: "both: label and name", selector: "ci=e2e", patterns: []string{"e2e-*"}, ns: "e2e-1", labels: ci, want: true},
		{name: "both: label without the name", selector: "ci=e2e", patterns: []string{"e2e-*"}, ns: "staging", labels: ci},
		{name: "both: name without the label", selector: "ci=e2e", patterns: []string{"e2e-*"}, ns: "e2e-1"},
		{name: "both: several patterns, one matches", selector: "ci=e2e", patterns: []string{"pr-*", "e2e-*"}, ns: "e2e-1", labels: ci, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Rule{Patterns: tt.patterns}
			if tt.selector != "" {
				r.Selector = mustSelector(t, tt.selector)
			}
			if got := r.Matches(tt.ns, labels.Set(tt.labels)); got != tt.want {
				t.Errorf("Rule{%s %q}.Matches(%q, %v) = %v, want %v", tt.selector, tt.patterns, tt.ns, tt.labels, got, tt.want)
			}
		})
	}
}

// TestParsedRuleMatches checks Parse and Matches together: what a rule
// written in a manifest matches.
func TestParsedRuleMatches(t *testing.T) {
	obj := manager(
		namespaceSelector(map[string]any{
			"matchLabels":      map[string]any{"ci": "e2e"},
			"matchExpressions": []any{map[string]any{"key": "keep", "operator": "DoesNotExist"}},
		}),
		namePatterns("e2e-*", "pr-[0-9]*"),
	)
	m, errs := Parse(obj)
	if len(errs) != 0 || m.Rule == nil {
		t.Fatalf("Parse() = %+v, %v; want a rule", m.Rule, errs)
	}
	for _, tt := range []struct {
		ns     string
		labels map[string]string
		want   bool
	}{
		{ns: "e2e-1", labels: map[string]string{"ci": "e2e"}, want: true},
		{ns: "pr-12", labels: map[string]string{"ci": "e2e", "team": "web"}, want: true},
		{ns: "e2e-1", labels: map[string]string{"ci": "e2e", "keep": "true"}},
		{ns: "e2e-1", labels: map[string]string{"ci": "unit"}},
		{ns: "staging", labels: map[string]string{"ci": "e2e"}},
		{ns: "pr-x", labels: map[string]string{"ci": "e2e"}},
	} {
		if got := m.Rule.Matches(tt.ns, labels.Set(tt.labels)); got != tt.want {
			t.Errorf("Matches(%q, %v) = %v, want %v", tt.ns, tt.labels, got, tt.want)
		}
	}
}
