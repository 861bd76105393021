package integration

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/deploy"
	"github.com/nsman/nsman/doctor"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestOnTheOldestKubernetes installs deploy/base's CRD, RBAC and admission
// policy on the kube-apiserver of deploy.MinKubernetes
// (test/tools/kube-min) and checks there what the other tests prove on
// the current release: the CRD refuses every malformed manager of
// TestCRDRejectsMalformed, naming its field, and admits every edge value
// of TestCRDAdmitsEdgeValues; the admission policy is in force (Setup
// waits for it); a sweep as nsman's ServiceAccount deletes; nsman doctor
// finds the version enough.
func TestOnTheOldestKubernetes(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.APITier, MinKubernetes: true})
	info, err := c.Admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if want := "v" + deploy.MinKubernetes + "."; !strings.HasPrefix(info.GitVersion, want) {
		t.Fatalf("kube-apiserver %s, want %s*: test/tools/kube-min pins another release than deploy.MinKubernetes", info.GitVersion, want)
	}
	env, err := nsmantest.Setup(ctx, c, nsmantest.CRD(t))
	if err != nil {
		t.Fatalf("install deploy/base on Kubernetes %s: %v", info.GitVersion, err)
	}

	ns := c.Namespace(t)
	for _, tc := range malformedCases() {
		obj := validManager(ns)
		tc.mutate(obj.Object)
		_, err := env.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			t.Errorf("%s: admitted, want rejected naming %s", tc.name, tc.field)
		case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field+": "):
			t.Errorf("%s: %v, want an Invalid error naming %s", tc.name, err, tc.field)
		}
	}
	for _, tc := range edgeCases() {
		obj := validManager(ns)
		tc.mutate(obj.Object)
		if _, err := env.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s: not admitted: %v", tc.name, err)
		}
	}

	// A sweep as nsman's ServiceAccount, under the admission policy.
	target := c.Namespace(t)
	if _, err := env.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(target).Create(ctx, managerObj(target, target, target, []any{ttlPolicy("delete at once", 0, deleteAction)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := env.Sweep(t, "-l", caseLabel+"="+target)
	wantCode(t, res, 0)
	wantState(t, res, target, target, report.StateFired)
	if !env.NamespaceGoneOrTerminating(t, target) {
		t.Errorf("namespace %s not deleted", target)
	}

	r := runDoctor(t, c.Kubeconfig)
	r.want(t, "apiServer", doctor.OK, info.GitVersion, "nsman needs "+deploy.MinKubernetes+" or later")
	r.want(t, "crd", doctor.OK, "as this nsman")
}
