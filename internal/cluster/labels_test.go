package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// PackedLabels answers as the label map it was packed from, the name
// label included, and selectors match it as they match the map.
func TestPackedLabels(t *testing.T) {
	set := map[string]string{nameLabel: "e2e-1", "ci": "e2e", "team": "", "example.com/tier": "a=b"}
	l := PackLabels("e2e-1", set)
	for k, want := range set {
		if got, ok := l.Lookup(k); !ok || got != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, true", k, got, ok, want)
		}
	}
	if l.Has("missing") || l.Get("missing") != "" {
		t.Error("a label the namespace lacks is found")
	}
	// A name label that does not hold the name (or none) is kept as is.
	if got := PackLabels("other", set).Get(nameLabel); got != "e2e-1" {
		t.Errorf("name label %q, want the stored e2e-1", got)
	}
	if PackLabels("e2e-1", map[string]string{"ci": "e2e"}).Has(nameLabel) {
		t.Error("a namespace without the name label has it")
	}
	for _, sel := range []string{"ci=e2e", "ci in (e2e,x),team", "!missing", "kubernetes.io/metadata.name=e2e-1", "example.com/tier", "ci!=e2e", "team=x"} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Matches(l), s.Matches(labels.Set(set)); got != want {
			t.Errorf("%s: packed %v, map %v", sel, got, want)
		}
	}
}
