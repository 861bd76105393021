package decide

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A manager governs the namespace it aims at, by spec.namespace or by its
// name, when it may act on it: it lives there, or in a trusted namespace.
func TestGovernorsNote(t *testing.T) {
	tests := []struct {
		name    string
		manager *unstructured.Unstructured
		aimed   string
		want    string
	}{
		{name: "by spec.namespace, from a trusted namespace", manager: newManager(), aimed: target, want: "nsman/cleanup"},
		{name: "by its name, from a trusted namespace", manager: newManager(noTarget), aimed: "cleanup", want: "nsman/cleanup"},
		{name: "its own namespace, untrusted", manager: newManager(livesIn(target, "cleanup")), aimed: target, want: "preview-7/cleanup"},
		{name: "another namespace, from an untrusted one", manager: newManager(livesIn("team-b", "cleanup")), aimed: target},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGovernors([]string{trusted})
			g.Note(tt.manager)
			if got := g.Shielding(tt.aimed); got != tt.want {
				t.Errorf("shielding %s: %q, want %q", tt.aimed, got, tt.want)
			}
		})
	}
}
