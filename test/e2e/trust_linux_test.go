package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// inRunnerPod runs bin with args as it runs in a CI runner's pod: the
// ServiceAccount's files at the path every pod has them, naming
// namespace, and the service host variables the kubelet sets, in a mount
// namespace of its own (unshare, as an unprivileged user may) so that
// nothing of the machine's changes.
func inRunnerPod(t *testing.T, namespace, bin string, args ...string) (string, string, int) {
	t.Helper()
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
	script := `set -e
mount -t tmpfs tmpfs /var/run
mkdir -p ` + dir + `
printf '%s' "$RUNNER_NAMESPACE" >` + dir + `/namespace
printf 'token' >` + dir + `/token
exec "$@"`
	env := append(os.Environ(), "RUNNER_NAMESPACE="+namespace, "POD_NAMESPACE=", "KUBECONFIG=", "HOME="+t.TempDir(),
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443")
	return runIn(t, env, "unshare", append([]string{"--mount", "--map-root-user", "sh", "-c", script, "sh", bin}, args...)...)
}

// TestRunnerPodNamespaceIsNotTrusted: nsman run with a kubeconfig in a CI
// runner's pod sweeps another cluster from outside. The runner pod's
// ServiceAccount namespace is no namespace the swept cluster trusts:
// whoever may create a namespace of that name there must not get a manager
// that deletes another team's namespace.
func TestRunnerPodNamespaceIsNotTrusted(t *testing.T) {
	bin := nsmanBinary(t)
	env, err := nsmantest.Setup(t.Context(), shared, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	victim := shared.Namespace(t)
	runner := createNamespace(t, "ci-runner-"+victim[len(victim)-5:])
	env.Apply(t, []byte(`apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: takeover, namespace: `+runner+`}
spec:
  namespace: `+victim+`
  policies:
    - name: gone at once
      condition: {type: TTL, params: {ttlSeconds: 0}}
      action: {type: DELETE}
`))

	stdout, stderr, code := inRunnerPod(t, runner, bin, "sweep", "--kubeconfig", env.Kubeconfig, "-n", runner, "-o", "json")
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	if len(rep.Entries) != 1 || rep.Entries[0].State != report.StateForbidden {
		t.Errorf("the manager in the runner's namespace %s aimed at %s: %+v, want it forbidden", runner, victim, rep.Entries)
	}
	if env.NamespaceGoneOrTerminating(t, victim) {
		t.Fatalf("namespace %s deleted by a manager in %s, the CI runner pod's namespace", victim, runner)
	}
	if !strings.Contains(stderr, "no namespace is trusted") {
		t.Errorf("stderr does not say that no namespace is trusted:\n%s", stderr)
	}
}
