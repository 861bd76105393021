package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// A tenant's webhook reaches its Service's Pod on the oldest Kubernetes
// nsman supports: the field selectors that pick the Pod (its name, IP,
// phase and spec.hostNetwork) are served there.
func TestTenantServiceOnTheOldestKubernetes(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.APITier, MinKubernetes: true})
	env, err := nsmantest.Setup(ctx, c, nsmantest.CRD(t))
	if err != nil {
		t.Fatalf("install deploy/base: %v", err)
	}
	ns := c.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	url := recv.ServiceURL(t, c.Admin, ns, "sink") + "/hooks/done"
	if _, err := env.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Create(ctx, managerObj(ns, ns, ns, []any{ttlPolicy("report at once", 0, webhookAction(url))}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := env.Sweep(t, "-l", caseLabel+"="+ns)
	wantState(t, res, ns, ns, report.StateFired)
	if got := len(recv.Deliveries()); got != 1 {
		t.Errorf("%d deliveries to the Service's Pod, want 1", got)
	}
}
