package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
)

// TestDryRunAsServiceAccount: with --as, a dry run from an admin's
// kubeconfig sees what the ServiceAccount named may, as the CronJob
// running as it would. One without list on NamespaceManagers is refused,
// named, and the sweep exits 2; nsman's own, under deploy/'s RBAC, plans
// what is due. Credentials that may not impersonate are refused as such,
// by the sweep and by a command that first asks the API server's version.
func TestDryRunAsServiceAccount(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	if _, err := shared.Admin.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	run := func(kubeconfig string, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		all := append([]string{"sweep", "--dry-run", "-o", "json", "--config-from=none", "-n", ns, "--kubeconfig", kubeconfig}, args...)
		return cmd.Execute(t.Context(), all, &stdout, &stderr), stdout.String(), stderr.String()
	}

	ci := cluster.ServiceAccountUser(ns, "ci")
	code, _, stderr := run(shared.Kubeconfig, "--as", ci)
	if want := `User "` + ci + `" cannot list resource "namespacemanagers"`; code != cmd.ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("--as %s: exit %d, %q; want exit %d saying %s", ci, code, stderr, cmd.ExitUsage, want)
	}

	code, stdout, stderr := run(shared.Kubeconfig, "--as", e.User)
	var rep report.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != cmd.ExitOK {
		t.Fatalf("--as %s: exit %d, %v; stderr %s", e.User, code, err, stderr)
	}
	if len(rep.Entries) != 1 || rep.Entries[0].State != report.StatePlanned {
		t.Errorf("--as %s: %+v, want %s/%s planned", e.User, rep.Entries, ns, ns)
	}

	// nsman's ServiceAccount may not impersonate.
	code, _, stderr = run(e.Kubeconfig, "--as", ci)
	if code != cmd.ExitUsage || !strings.Contains(stderr, "cannot impersonate") {
		t.Errorf("--as from credentials that may not impersonate: exit %d, %q; want exit %d saying so", code, stderr, cmd.ExitUsage)
	}
	var out, errOut bytes.Buffer
	code = cmd.Execute(t.Context(), []string{"restore", ns, "--dry-run", "--kubeconfig", e.Kubeconfig, "--as", ci}, &out, &errOut)
	if code != cmd.ExitUsage || !strings.Contains(errOut.String(), "cannot impersonate") {
		t.Errorf("nsman restore --as from credentials that may not impersonate: exit %d, %q; want exit %d saying so", code, errOut.String(), cmd.ExitUsage)
	}
}
