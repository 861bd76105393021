package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/crdref"
	"github.com/nsman/nsman/test/nsmantest"
)

// kubectl explain tells each field of nsman's CRD what the CRD's
// description says, from the schema the API server publishes, for fields
// of spec and status, nested in arrays and maps.
func TestKubectlExplainTellsTheFields(t *testing.T) {
	setup(t)
	fields, err := crdref.Fields()
	if err != nil {
		t.Fatal(err)
	}
	description := map[string]string{}
	for _, f := range fields {
		description[f.Path] = f.Schema.Description
	}
	for _, path := range []string{"spec.policies", "spec.policies[].condition.params.idleSeconds", "spec.policies[].action.params.selectors[].kind",
		"status.claim.sweep", "status.checks", "status.rule.latest[].reclaimed.cpu"} {
		t.Run(path, func(t *testing.T) {
			want := strings.Join(strings.Fields(description[path]), " ")
			if want == "" {
				t.Fatalf("the CRD has no description of %s", path)
			}
			explained := "namespacemanager." + strings.NewReplacer("[]", "", ".*", "").Replace(path)
			var got string
			// The API server publishes a CRD's schema a moment after it is established.
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				out, err := exec.CommandContext(ctx, nsmantest.Kubectl(t), "explain", explained, "--kubeconfig", shared.Kubeconfig).CombinedOutput()
				cancel()
				got = strings.Join(strings.Fields(string(out)), " ")
				if err == nil && strings.Contains(got, want) || time.Now().After(end) {
					break
				}
			}
			if !strings.Contains(got, want) {
				t.Errorf("kubectl explain %s says %q, want it to say %q", explained, got, want)
			}
		})
	}
}
