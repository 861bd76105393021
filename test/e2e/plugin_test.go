package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// pluginDir links the built binary as kubectl-nsman into a directory of its
// own, as make install-plugin does, and returns the directory.
func pluginDir(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "kubectl-nsman")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runIn runs name with args and only the given environment, and returns
// stdout, stderr and the exit code.
func runIn(t *testing.T, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Env = &stdout, &stderr, env
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("%s %v: %v", name, args, err)
	return "", "", 0
}

// TestPluginNamesItselfKubectlNsman runs the binary by its plugin name,
// without kubectl: its usage lines and hints say 'kubectl nsman'.
func TestPluginNamesItselfKubectlNsman(t *testing.T) {
	plugin := filepath.Join(pluginDir(t, nsmanBinary(t)), "kubectl-nsman")
	env := []string{"HOME=" + t.TempDir(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST="}

	stdout, stderr, code := runIn(t, env, plugin, "sweep", "--help")
	if code != 0 || !strings.Contains(stdout, "Usage:\n  kubectl nsman sweep [flags]\n") {
		t.Errorf("sweep --help: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	_, stderr, code = runIn(t, env, plugin, "swep")
	if code != 2 || !strings.Contains(stderr, `kubectl nsman: unknown command "swep"; see 'kubectl nsman --help'`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, stderr)
	}
}

// TestPluginThroughKubectl installs kubectl-nsman on PATH and runs it the way
// users do, through kubectl (the pinned one, of the API server's release),
// which finds it, passes it the arguments after 'nsman' and the environment
// (KUBECONFIG), and returns its exit code.
func TestPluginThroughKubectl(t *testing.T) {
	kubectl := nsmantest.Kubectl(t)
	dir := pluginDir(t, nsmanBinary(t))
	// PATH holds the plugin's directory and kubectl's (the binary cache)
	// alone, so that no other kubectl-nsman shadows this one.
	env := []string{
		"PATH=" + dir + string(os.PathListSeparator) + filepath.Dir(kubectl),
		"HOME=" + t.TempDir(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=",
	}
	kube := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		return runIn(t, env, kubectl, args...)
	}

	stdout, stderr, code := kube(env, "plugin", "list")
	if code != 0 || !strings.Contains(stdout, filepath.Join(dir, "kubectl-nsman")) {
		t.Fatalf("kubectl plugin list: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}

	if stdout, stderr, code := kube(env, "nsman", "version"); code != 0 || !strings.HasPrefix(stdout, "nsman "+testVersion+" ") {
		t.Errorf("kubectl nsman version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if stdout, stderr, code := kube(env, "nsman", "restore", "--help"); code != 0 || !strings.Contains(stdout, "Usage:\n  kubectl nsman restore [-n] NAMESPACE [flags]\n") {
		t.Errorf("kubectl nsman restore --help: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	if stdout, stderr, code := kube(env, "nsman", "validate", "--help"); code != 0 || !strings.Contains(stdout, "\n  kubectl nsman validate -f examples/\n") {
		t.Errorf("kubectl nsman validate --help: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	// The plugin's exit codes reach the caller.
	if _, stderr, code := kube(env, "nsman", "swep"); code != 2 || !strings.Contains(stderr, "see 'kubectl nsman --help'") {
		t.Errorf("kubectl nsman swep: exit %d, stderr %q; want 2 and a hint naming kubectl nsman", code, stderr)
	}

	example := filepath.Join(nsmantest.RepoRoot(), "examples", "ttl-delete.yaml")
	if _, stderr, code := kube(env, "nsman", "validate", "-f", example); code != 0 || !strings.Contains(stderr, "1 valid, 0 invalid") {
		t.Errorf("kubectl nsman validate -f %s: exit %d, stderr %q", example, code, stderr)
	}

	// A dry-run sweep through the kubeconfig in $KUBECONFIG, as kubectl's
	// own commands would use it.
	crd := nsmantest.CRD(t)
	nsEnv, err := nsmantest.Setup(t.Context(), shared, crd)
	if err != nil {
		t.Fatal(err)
	}
	ns := shared.Namespace(t)
	nsEnv.Apply(t, []byte(`apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: `+ns+`
  namespace: `+ns+`
spec:
  policies:
    - name: expire in an hour
      condition: {type: TTL, params: {ttlSeconds: 3600}}
      action: {type: DELETE}
`))
	withCluster := append(env[:len(env):len(env)], "KUBECONFIG="+nsEnv.Kubeconfig)
	at := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	stdout, stderr, code = kube(withCluster, "nsman", "sweep", "--dry-run", "--at", at, "-n", ns, "-o", "json")
	if code != 0 {
		t.Fatalf("kubectl nsman sweep --dry-run: exit %d\n%s", code, stderr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	if len(rep.Entries) != 1 || rep.Entries[0].State != report.StatePlanned {
		t.Fatalf("report %+v, want the manager's DELETE planned, not done", rep)
	}
	cs, err := kubernetes.NewForConfig(shared.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s after a dry run: %v", ns, err)
	}
	if got.DeletionTimestamp != nil {
		t.Fatalf("namespace %s is being deleted after a dry run", ns)
	}

	// kubectl nsman due: the DELETE in an hour, within two.
	stdout, stderr, code = kube(withCluster, "nsman", "due", "--within", "2h", "-n", ns, "-o", "json", "--config-from=none")
	var soon struct {
		Due []struct{ Name, Action string } `json:"due"`
	}
	if err := json.Unmarshal([]byte(stdout), &soon); code != 0 || err != nil || len(soon.Due) != 1 || soon.Due[0].Name != ns || soon.Due[0].Action != "DELETE" {
		t.Errorf("kubectl nsman due: exit %d, %v, stdout:\n%s\nstderr: %s\nwant the DELETE in an hour", code, err, stdout, stderr)
	}
}

// TestPluginCompletionThroughKubectl completes 'kubectl nsman hold <TAB>'
// as kubectl (1.26 and later) completes a plugin's words: it runs
// kubectl_complete-nsman from PATH, which asks kubectl-nsman; the
// namespaces come from the cluster in $KUBECONFIG.
func TestPluginCompletionThroughKubectl(t *testing.T) {
	kubectl := nsmantest.Kubectl(t)
	dir := pluginDir(t, nsmanBinary(t))
	script := filepath.Join(nsmantest.RepoRoot(), "deploy", "kubectl-plugin", "kubectl_complete-nsman")
	if err := os.Symlink(script, filepath.Join(dir, "kubectl_complete-nsman")); err != nil {
		t.Fatal(err)
	}
	ns := shared.Namespace(t)
	env := []string{
		"PATH=" + dir + string(os.PathListSeparator) + filepath.Dir(kubectl),
		"HOME=" + t.TempDir(), "KUBECONFIG=" + shared.Kubeconfig, "KUBERNETES_SERVICE_HOST=",
	}
	stdout, stderr, code := runIn(t, env, kubectl, "__complete", "nsman", "hold", ns[:len(ns)-1])
	if words := strings.Split(stdout, "\n"); code != 0 || !slices.Contains(words, ns) {
		t.Errorf("kubectl __complete nsman hold %s: exit %d, stdout:\n%s\nstderr: %s\nwant %s among the words", ns[:len(ns)-1], code, stdout, stderr, ns)
	}
	// The commands complete too: nsman due among them.
	stdout, stderr, code = runIn(t, env, kubectl, "__complete", "nsman", "du")
	if code != 0 || !strings.HasPrefix(stdout, "due\t") {
		t.Errorf("kubectl __complete nsman du: exit %d, stdout:\n%s\nstderr: %s\nwant due", code, stdout, stderr)
	}
}
