package integration

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
)

// A manager's status keeps what its OWNER_GONE policy remembers,
// status.checks.*.owner and .goneSince, as the sweep writes it: the API
// server prunes a field the CRD does not declare, and the owner would be
// forgotten, and the time it went start again, at every sweep.
func TestStatusKeepsOwnerGoneChecks(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	orphan := map[string]any{"name": "orphan", "condition": map[string]any{"type": policy.ConditionOwnerGone}, "action": deleteAction}
	createManager(t, managerObj(ns, ns, "owner-gone-status", []any{orphan}))
	checks := map[string]policy.CheckState{"orphan": {Owner: "applications.argoproj.io/argocd/pr-12", GoneSince: time.Now().UTC()}}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"checks": checks}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if got := managerStatus(t, ns, ns).Checks; !maps.Equal(got, checks) {
		t.Errorf("status.checks read back as %+v, written as %+v", got, checks)
	}
}
