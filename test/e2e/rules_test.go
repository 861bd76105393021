package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestRuleCleansUpAfterACrashedPipeline plays the backstop a rule is for,
// with the built binary: namespaces e2e-* that a pipeline left behind, one
// of them labelled for a manager of its own, and one rule. One sweep deletes
// the leftovers and leaves the managed one to its manager; the next does
// nothing.
func TestRuleCleansUpAfterACrashedPipeline(t *testing.T) {
	bin := nsmanBinary(t)
	env, err := nsmantest.Setup(t.Context(), shared, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	home := shared.Namespace(t)
	prefix := "e2e-" + home[len(home)-5:]
	var leftovers []string
	for i := range 3 {
		leftovers = append(leftovers, createNamespace(t, fmt.Sprintf("%s-run-%d", prefix, i)))
	}
	managed := createNamespace(t, prefix+"-managed")
	env.Apply(t, []byte(`apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: leftovers, namespace: `+home+`}
spec:
  namePatterns: ["`+prefix+`-*"]
  policies:
    - name: gone at once
      condition: {type: TTL, params: {ttlSeconds: 0}}
      action: {type: DELETE}
---
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: keep, namespace: `+home+`}
spec:
  namespace: `+managed+`
  policies:
    - name: in a day
      condition: {type: TTL, params: {ttlSeconds: 86400}}
      action: {type: DELETE}
`))

	sweepOnce := func() report.Report {
		t.Helper()
		stdout, stderr, code := run(t, bin, "sweep", "--kubeconfig", env.Kubeconfig, "-n", home, "--trusted-namespaces", home, "-o", "json")
		if code != 0 {
			t.Fatalf("sweep: exit %d\n%s", code, stderr)
		}
		var rep report.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, stdout)
		}
		return rep
	}
	states := func(r report.Report) map[string]report.State {
		out := map[string]report.State{}
		for _, e := range r.Entries {
			if e.Rule && e.Name == "leftovers" {
				out[e.Target] = e.State
			}
		}
		return out
	}

	got := states(sweepOnce())
	for _, ns := range leftovers {
		if got[ns] != report.StateFired || !env.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("leftover %s: %q, deleted %v; want fired and deleted", ns, got[ns], env.NamespaceGoneOrTerminating(t, ns))
		}
	}
	if got[managed] != report.StateGoverned || env.NamespaceGoneOrTerminating(t, managed) {
		t.Errorf("managed %s: %q; want governed and kept", managed, got[managed])
	}
	got = states(sweepOnce())
	if len(got) != 1 || got[managed] != report.StateGoverned {
		t.Errorf("second sweep: %v, want only the governed namespace", got)
	}
	stdout, _, code := run(t, bin, "sweep", "--kubeconfig", env.Kubeconfig, "-n", home, "--trusted-namespaces", home)
	if code != 0 || !strings.Contains(stdout, home+"/leftovers (rule)") {
		t.Errorf("text report: exit %d\n%s", code, stdout)
	}
}

func createNamespace(t *testing.T, name string) string {
	t.Helper()
	if _, err := shared.Admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}
