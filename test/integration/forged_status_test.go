package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// TestForgedStatusReadsNoOtherNamespace: a tenant's manager, deactivated,
// whose status says (written by hand, with no targetUID) that it deleted
// another tenant's namespace, stuck in Terminating. The tenancy guard
// refuses the manager that target before anything reads it: the manager's
// entry, status and Events say nothing of the other namespace. A status
// without targetUID names no namespace even for a trusted manager.
func TestForgedStatusReadsNoOtherNamespace(t *testing.T) {
	e := setup(t)
	tenant, trusted, victim := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := tenant
	n, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), victim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Finalizers = append(n.Spec.Finalizers, "nsman.test/own")
	if _, err := shared.Admin.CoreV1().Namespaces().Finalize(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseOwnFinalizer(victim) })
	if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	forge := func(ns, name string) {
		t.Helper()
		createManager(t, managerObj(ns, name, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(victim), deactivated))
		// Later than the namespace's creation, as a DELETE of it would be.
		last := status.LastAction{Policy: "delete at once", Action: "DELETE", Result: report.ResultSucceeded, Time: time.Now().Add(time.Minute).UTC()}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"state": report.StateFired, "target": victim, "lastAction": last}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	forge(tenant, "forged")
	forge(trusted, "no-uid")
	time.Sleep(2 * time.Second) // past --stuck-after

	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", trusted, "--stuck-after", "1s")
	wantCode(t, res, 0)
	for _, m := range []struct{ ns, name string }{{tenant, "forged"}, {trusted, "no-uid"}} {
		got := wantState(t, res, m.ns, m.name, report.StateDeactivated)
		if got.Stuck != nil || strings.Contains(got.Message, "stuck") {
			t.Errorf("%s/%s: entry %+v (stuck %+v): want nothing read of %s", m.ns, m.name, got, got.Stuck, victim)
		}
		if st := managerStatus(t, m.ns, m.name); st.Stuck != nil {
			t.Errorf("%s/%s: status says %s is stuck: %+v", m.ns, m.name, victim, st.Stuck)
		}
		if n := stuckEvents(t, m.ns, m.name); n != 0 {
			t.Errorf("%s/%s: %d NamespaceStuck Events, want none", m.ns, m.name, n)
		}
	}
	if res.Report.Summary.Stuck != 0 {
		t.Errorf("summary counts %d stuck namespaces, want 0", res.Report.Summary.Stuck)
	}
}
