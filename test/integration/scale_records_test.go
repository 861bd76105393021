package integration

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

var scaleDownAction = map[string]any{"type": "SCALE_DOWN"}

// scaledDown creates a namespace with Deployments web (3 replicas) and db
// (2) and a manager that scales them down at once, sweeps it, and checks
// both are at zero with their counts recorded.
func scaledDown(t *testing.T) string {
	t.Helper()
	ns := shared.Namespace(t)
	createDeployment(t, ns, "web", 3)
	createDeployment(t, ns, "db", 2)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("scale at once", 0, scaleDownAction)}))
	res := env.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	wantState(t, res, ns, ns, report.StateFired)
	wantWorkload(t, ns, "web", 0, "3")
	wantWorkload(t, ns, "db", 0, "2")
	return ns
}

// A record is the count a workload had when nsman last scaled it to zero:
// a workload scaled up by hand after a SCALE_DOWN gets a new record at the
// next one, and restore brings back that count, not the first. A workload
// still at zero keeps its record.
func TestScaleDownRecordsTheLastCount(t *testing.T) {
	e := setup(t)
	ns := scaledDown(t)

	// Someone scales web up by hand, record and all; the manager is re-armed
	// (a new generation) and scales down again.
	scaleByHand(t, ns, "web", 5)
	rearm(t, ns, ns)
	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	fired := wantState(t, res, ns, ns, report.StateFired)
	if want := "scale Deployment/web from 5 to 0"; !slices.Contains(fired.Effects, want) {
		t.Errorf("effects %q, want %q", fired.Effects, want)
	}
	wantWorkload(t, ns, "web", 0, "5")
	wantWorkload(t, ns, "db", 0, "2")

	out, code := runRestore(t, ns)
	if code != 0 {
		t.Fatalf("nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	wantWorkload(t, ns, "web", 5, "")
	wantWorkload(t, ns, "db", 2, "")
}

// Restore leaves a workload that is no longer at zero alone, says why, and
// drops its record, which no longer applies: a later restore cannot bring
// back its count.
func TestRestoreDropsTheRecordOfAWorkloadScaledSince(t *testing.T) {
	setup(t)
	ns := scaledDown(t)

	scaleByHand(t, ns, "web", 1)
	out, code := runRestore(t, ns)
	if code != 0 {
		t.Fatalf("nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	if want := "leave Deployment/web at 1 replicas: scaled since nsman scaled it down"; !strings.Contains(out, want) {
		t.Errorf("restore printed %q, want a line saying %q", out, want)
	}
	if want := "scale Deployment/db from 0 to 2"; !strings.Contains(out, want) {
		t.Errorf("restore printed %q, want a line saying %q", out, want)
	}
	wantWorkload(t, ns, "web", 1, "")
	wantWorkload(t, ns, "db", 2, "")

	// Scaled to zero by hand now, web has no record to restore.
	scaleByHand(t, ns, "web", 0)
	out, code = runRestore(t, ns)
	if code != 0 {
		t.Fatalf("second nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	if want := fmt.Sprintf("nothing to restore in %s", ns); !strings.Contains(out, want) {
		t.Errorf("second restore printed %q, want %q", out, want)
	}
	wantWorkload(t, ns, "web", 0, "")
}

func createDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), nsmantest.Deployment(name, replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scaleByHand sets a Deployment's replicas as a user would, leaving its
// annotations as they are.
func scaleByHand(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := shared.Admin.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rearm sets spec.deactivated back to false, as a user re-arms a manager.
func rearm(t *testing.T, ns, name string) {
	t.Helper()
	patch := []byte(`{"spec":{"deactivated":false}}`)
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantWorkload checks a Deployment's replicas and its record; an empty
// record means none.
func wantWorkload(t *testing.T, ns, name string, replicas int32, record string) {
	t.Helper()
	d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, recorded := d.Annotations[status.ReplicasAnnotation]
	if *d.Spec.Replicas != replicas || got != record || (record == "" && recorded) {
		t.Errorf("Deployment %s/%s: replicas %d, record %q (present %v); want %d and %q", ns, name, *d.Spec.Replicas, got, recorded, replicas, record)
	}
}

// runRestore runs nsman restore -n ns as nsman's ServiceAccount and returns
// what it printed and its exit code.
func runRestore(t *testing.T, ns string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"restore", "-n", ns, "--kubeconfig", env.Kubeconfig}, &out, &out)
	return out.String(), code
}
