package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

const testVersion = "v0.0.0-e2e"

// nsmanBinary builds bin/nsman the way make build does, with a version.
func nsmanBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nsman")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/nsman/nsman/cmd.version="+testVersion, "-o", bin, "github.com/nsman/nsman/cmd/nsman")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run runs the binary and returns stdout, stderr and the exit code.
func run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	// No in-cluster or user kubeconfig may leak into the test.
	return runIn(t, append(os.Environ(), "KUBECONFIG=", "HOME="+t.TempDir(), "KUBERNETES_SERVICE_HOST="), bin, args...)
}

func TestNsmanBinary(t *testing.T) {
	bin := nsmanBinary(t)
	if out, _, code := run(t, bin, "version"); code != 0 || !strings.HasPrefix(out, "nsman "+testVersion+" ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}

	// Before the CRD is installed the sweep cannot run: exit 2, saying why.
	_, stderr, code := run(t, bin, "sweep", "--kubeconfig", shared.Kubeconfig)
	if code != 2 || !strings.Contains(stderr, "not installed") {
		t.Fatalf("sweep without the CRD: exit %d, stderr %q; want 2 naming the missing CRD", code, stderr)
	}
	// No cluster at all.
	_, stderr, code = run(t, bin, "sweep", "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if code != 2 {
		t.Fatalf("sweep with a missing kubeconfig: exit %d, stderr %q; want 2", code, stderr)
	}

	crd := nsmantest.CRD(t)
	env, err := nsmantest.Setup(t.Context(), shared, crd)
	if err != nil {
		t.Fatal(err)
	}
	ns := shared.Namespace(t)
	manifest := `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: ` + ns + `
  namespace: ` + ns + `
spec:
  policies:
    - name: expire in an hour
      condition: {type: TTL, params: {ttlSeconds: 3600}}
      action: {type: DELETE}
`
	env.Apply(t, []byte(manifest))

	stdout, stderr, code := run(t, bin, "sweep", "--kubeconfig", env.Kubeconfig, "-n", ns, "-o", "json", "--log-format", "json", "--log-level", "debug")
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	if rep.Version != report.ReportVersion || len(rep.Entries) != 1 || rep.Entries[0].State != report.StateWaiting {
		t.Fatalf("report %+v, want one waiting manager", rep)
	}
	// JSON logs: outside a pod, with no CronJob taken, that nothing is
	// trusted; then one line per decision with stable keys.
	var trust, decision struct{ Level, Msg, Manager, Namespace, State string }
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &trust) != nil || json.Unmarshal([]byte(lines[1]), &decision) != nil {
		t.Fatalf("want two JSON log lines, got:\n%s", stderr)
	}
	if trust.Level != "WARN" || !strings.HasPrefix(trust.Msg, "no namespace is trusted") {
		t.Errorf("first log line %+v, want the warning that no namespace is trusted", trust)
	}
	if decision.Msg != "decision" || decision.Manager != ns+"/"+ns || decision.Namespace != ns || decision.State != "waiting" {
		t.Errorf("decision log %+v", decision)
	}

	stdout, _, code = run(t, bin, "sweep", "--kubeconfig", env.Kubeconfig, "-n", ns)
	if code != 0 || !strings.Contains(stdout, "MANAGER") || !strings.Contains(stdout, ns+"/"+ns) || !strings.Contains(stdout, "waiting") {
		t.Fatalf("text report: exit %d\n%s", code, stdout)
	}

	if _, stderr, code := run(t, bin, "sweep", "--kubeconfig", env.Kubeconfig, "-o", "jsonpath"); code != 2 {
		t.Fatalf("-o jsonpath: exit %d (%s), want 2", code, stderr)
	}
}
