package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nsman/nsman/doctor"
)

// unreachableKubeconfig is a kubeconfig of a cluster that never answers.
func unreachableKubeconfig(t *testing.T) string {
	return kubeconfigOf(t, "https://127.0.0.1:1")
}

// kubeconfigOf is a kubeconfig of the API server at server, with a token.
func kubeconfigOf(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDoctorUsageErrors: doctor exits 2, saying why, on a bad flag and
// when the cluster cannot be reached, and prints no report.
func TestDoctorUsageErrors(t *testing.T) {
	unreachable := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "table"}, `-o "table": want text, wide, json, yaml, name`},
		{[]string{"--webhook-allow", "https://hooks.example.com/"}, "--webhook-allow"},
		{[]string{"extra"}, "unknown command"},
		{nil, "the cluster cannot be reached"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"doctor", "--kubeconfig", unreachable}, tc.args...)
		if code := Execute(t.Context(), args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("nsman %q: exit %d, stderr %q, stdout %q; want exit %d saying %q and no report", args, code, stderr.String(), stdout.String(), ExitUsage, tc.want)
		}
	}
}

// TestDoctorVerdict: the text report's last line counts what failed, else
// the warnings, else says all is well.
func TestDoctorVerdict(t *testing.T) {
	for _, tc := range []struct {
		statuses []doctor.Status
		want     string
	}{
		{[]doctor.Status{doctor.OK, doctor.OK}, "\nall is well\n"},
		{[]doctor.Status{doctor.OK, doctor.Warning}, "\nno check failed; 1 warning(s)\n"},
		{[]doctor.Status{doctor.Failed, doctor.Warning, doctor.Failed}, "\n2 check(s) failed\n"},
	} {
		var r doctor.Report
		for i, s := range tc.statuses {
			r.Checks = append(r.Checks, doctor.Check{Name: fmt.Sprint("check", i), Status: s, Message: "m", Details: []string{}})
		}
		var out bytes.Buffer
		if err := doctor.WriteText(&out, r, false); err != nil || !strings.HasSuffix(out.String(), tc.want) {
			t.Errorf("%v: %v\n%s; want it to end %q", tc.statuses, err, out.String(), tc.want)
		}
	}
}
