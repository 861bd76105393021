package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// --protected-namespaces adds to a floor it cannot remove: kube-system,
// kube-public, kube-node-lease and the namespace nsman runs in stay
// protected whatever the flag says, even against a manager in a trusted
// namespace.
func TestProtectedFloorOutlastsTheFlag(t *testing.T) {
	e := setup(t)
	own := shared.Namespace(t) // stands for the namespace nsman runs in
	t.Setenv("POD_NAMESPACE", own)
	caseID := own
	managers := map[string]string{ // manager name -> target
		"kube-public-" + own: "kube-public",
		"own-" + own:         own,
	}
	for name, target := range managers {
		createManager(t, managerObj(nsmantest.ServiceAccountNamespace, name, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
		t.Cleanup(func() {
			_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(nsmantest.ServiceAccountNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}

	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--protected-namespaces=something-else")
	wantCode(t, res, 0)
	for name, target := range managers {
		got := wantState(t, res, nsmantest.ServiceAccountNamespace, name, report.StateForbidden)
		if want := "namespace " + target + " is protected"; !strings.Contains(got.Message, want) {
			t.Errorf("%s: message %q does not say %q", name, got.Message, want)
		}
		if e.NamespaceGoneOrTerminating(t, target) {
			t.Errorf("namespace %s deleted", target)
		}
		if e.Deactivated(t, nsmantest.ServiceAccountNamespace, name) {
			t.Errorf("manager %s deactivated", name)
		}
	}
}
