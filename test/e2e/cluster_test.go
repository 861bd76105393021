package e2e

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/test/cluster"
)

// goBuild builds pkg into a temporary directory and returns the binary.
func goBuild(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// TestClusterUpAndDown drives the tool behind make cluster-up and
// cluster-down: up prints KUBECONFIG=<path> last and leaves a working control
// plane behind, a second up reuses it, and down stops every process.
func TestClusterUpAndDown(t *testing.T) {
	bin := goBuild(t, "github.com/nsman/nsman/test/cluster/nsman-cluster")
	dir := filepath.Join(t.TempDir(), "state")
	tool := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"-dir", dir, "-tier", "api"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			t.Logf("nsman-cluster %s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
		return stdout.String(), err
	}
	t.Cleanup(func() { _, _ = tool("down") })

	out, err := tool("up")
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	kubeconfig, ok := strings.CutPrefix(lines[len(lines)-1], "KUBECONFIG=")
	if !ok {
		t.Fatalf("last line of up = %q, want KUBECONFIG=<path>", lines[len(lines)-1])
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("control plane from %s: %v", kubeconfig, err)
	}

	again, err := tool("up")
	if err != nil {
		t.Fatalf("second up: %v", err)
	}
	if strings.TrimSpace(again) != "KUBECONFIG="+kubeconfig {
		t.Fatalf("second up printed %q, want the running control plane's KUBECONFIG=%s", again, kubeconfig)
	}

	data, err := os.ReadFile(filepath.Join(dir, "serve.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool("down"); err != nil {
		t.Fatalf("down: %v", err)
	}
	if cluster.ProcessAlive(pid) {
		t.Fatalf("control plane process %d still running after down", pid)
	}
	host, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's port closes once it has stopped.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", host.Host, time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver still listening on %s after down", host.Host)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
