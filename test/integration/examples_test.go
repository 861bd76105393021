package integration

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/test/nsmantest"
)

// TestExamplesPlayOut applies every manifest in examples/ under nsman's CRD
// and checks that each manager does what its file says.
func TestExamplesPlayOut(t *testing.T) {
	e := setup(t)
	files, err := filepath.Glob(filepath.Join(nsmantest.RepoRoot(), "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var all []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := nsmantest.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, objs...)
	}
	e.PlayOut(t, nsmantest.NewReceiver(t), all)
}
