package nsmantest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nsman/nsman/test/cluster"
)

// Kubectl is the kubectl that test/tools/build.sh (make control-plane)
// built from the Kubernetes release test/tools/kube pins, the API server's.
// The test fails when it is not built.
func Kubectl(t testing.TB) string {
	t.Helper()
	dir, err := cluster.ToolDir("kube", "k8s.io/kubernetes", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(cluster.MissingTool(bin))
	}
	return bin
}
