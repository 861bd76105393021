package integration

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// createSweepCronJob creates a CronJob name in namespace ns, labelled as
// deploy/ and the chart label nsman's, whose container nsman runs args as
// the ServiceAccount sa.
func createSweepCronJob(t *testing.T, ns, name, sa string, args ...string) {
	t.Helper()
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "nsman"}},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			Suspend:  new(true), // nothing runs it here: a dry run reads it
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				ServiceAccountName: sa,
				RestartPolicy:      corev1.RestartPolicyNever,
				Containers:         []corev1.Container{{Name: "nsman", Image: "ghcr.io/nsman/nsman:0.1.0", Args: args}},
			}}}},
		},
	}
	if _, err := shared.Admin.BatchV1().CronJobs(ns).Create(t.Context(), cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// bindAsNsman binds the ServiceAccount sa of namespace ns to nsman's
// ClusterRole (deploy/base/rbac.yaml), as an install does.
func bindAsNsman(t *testing.T, ns, sa string) {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nsman-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nsman"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	if _, err := shared.Admin.RbacV1().ClusterRoleBindings().Create(t.Context(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
}

// A dry run outside a pod sees what nsman's CronJob in the cluster sees:
// it takes the CronJob's namespace as its own (trusted, protected) and the
// CronJob's flags for those not given, and says so. Flags given win;
// --config-from none, or a pod's namespace, skip the lookup; two CronJobs
// are an error that names both; a CronJob whose pods may not act as nsman
// is not taken unasked; only a dry run takes it.
func TestDryRunSeesWhatTheCronJobSees(t *testing.T) {
	e := setup(t)
	installed, guarded, target := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := installed
	bindAsNsman(t, installed, "nsman")
	createSweepCronJob(t, installed, "nsman", "nsman", "sweep", "--log-format=json", "--protected-namespaces=default,namespace-manager,"+guarded, "--max-hold=1h")
	// Its namespace's managers may target others only where it is trusted.
	createManager(t, managerObj(installed, "remote", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
	// The CronJob protects guarded.
	createManager(t, managerObj(guarded, guarded, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	sel := caseLabel + "=" + caseID
	// From a laptop: no pod's namespace, as a person who may list
	// CronJobs, here the admin.
	t.Setenv("POD_NAMESPACE", "")
	laptop := func(args ...string) nsmantest.Result {
		return e.Sweep(t, append([]string{"--kubeconfig", shared.Kubeconfig}, args...)...)
	}

	as := laptop("--dry-run", "--config-from=auto", "-l", sel)
	wantState(t, as, installed, "remote", report.StatePlanned)
	if got := wantState(t, as, guarded, guarded, report.StateForbidden); !strings.Contains(got.Message, "namespace "+guarded+" is protected") {
		t.Errorf("%s: %q, want it protected as the CronJob's flags say", guarded, got.Message)
	}
	for _, want := range []string{"dry run as CronJob " + installed + "/nsman sweeps", "--protected-namespaces=default,namespace-manager," + guarded, "--max-hold=1h"} {
		if !strings.Contains(as.Stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, as.Stderr)
		}
	}
	if explicit := laptop("--dry-run", "--config-from="+installed+"/nsman", "-l", sel); explicit.Code != 0 || explicit.Entry(t, installed, "remote").State != report.StatePlanned {
		t.Errorf("--config-from %s/nsman: exit %d, %+v; want it as the CronJob sees it", installed, explicit.Code, explicit.Report.Entries)
	}

	// --as the CronJob's ServiceAccount (docs/kubectl-plugin.md): the
	// CronJob is looked for with the caller's own rights, for nsman's may not
	// list ClusterRoleBindings, and the sweep sees what that account may.
	asSA := laptop("--dry-run", "--config-from=auto", "--as", cluster.ServiceAccountUser(installed, "nsman"), "-l", sel)
	if asSA.Code != 0 || !strings.Contains(asSA.Stderr, "dry run as CronJob "+installed+"/nsman sweeps") {
		t.Errorf("--as the CronJob's ServiceAccount: exit %d, want its CronJob taken\n%s", asSA.Code, asSA.Stderr)
	}
	wantState(t, asSA, installed, "remote", report.StatePlanned)

	// Flags given here win over the CronJob's.
	mine := laptop("--dry-run", "--config-from=auto", "--protected-namespaces=default", "-l", sel)
	wantState(t, mine, guarded, guarded, report.StatePlanned)
	wantState(t, mine, installed, "remote", report.StatePlanned)

	// This command's flags alone: the installed namespace is no one's.
	alone := laptop("--dry-run", "--config-from=none", "-l", sel)
	wantState(t, alone, installed, "remote", report.StateForbidden)
	wantState(t, alone, guarded, guarded, report.StatePlanned)

	// In a pod, its namespace is nsman's: no lookup.
	t.Setenv("POD_NAMESPACE", target)
	inPod := laptop("--dry-run", "--config-from=auto", "-l", sel)
	wantState(t, inPod, installed, "remote", report.StateForbidden)
	if strings.Contains(inPod.Stderr, "dry run as CronJob") {
		t.Errorf("a sweep in a pod took the CronJob's configuration:\n%s", inPod.Stderr)
	}
	t.Setenv("POD_NAMESPACE", "")

	t.Setenv("POD_NAMESPACE", target)
	if inPodExplicit := laptop("--dry-run", "--config-from="+installed+"/nsman", "-l", sel); inPodExplicit.Code != 2 || !strings.Contains(inPodExplicit.Stderr, "--config-from applies to a dry run from outside the cluster") {
		t.Errorf("--config-from NAMESPACE/NAME in a pod: exit %d, want it refused\n%s", inPodExplicit.Code, inPodExplicit.Stderr)
	}
	t.Setenv("POD_NAMESPACE", "")

	// Only a dry run takes it.
	if real := laptop("--config-from="+installed+"/nsman", "-l", sel); real.Code != 2 || !strings.Contains(real.Stderr, "--config-from applies to a dry run") {
		t.Errorf("a sweep with --config-from and no --dry-run: exit %d\n%s", real.Code, real.Stderr)
	}
	// No such CronJob: named, exit 2.
	if missing := laptop("--dry-run", "--config-from="+target+"/nsman", "-l", sel); missing.Code != 2 || !strings.Contains(missing.Stderr, "no such CronJob") {
		t.Errorf("--config-from of a CronJob that is not there: exit %d\n%s", missing.Code, missing.Stderr)
	}
	// One who may not list CronJobs (nsman's ServiceAccount): this
	// command's flags alone, and a warning that says why.
	if denied := e.Sweep(t, "--dry-run", "-l", sel, "--config-from=auto"); denied.Code != 0 || denied.Entry(t, installed, "remote").State != report.StateForbidden ||
		!strings.Contains(denied.Stderr, "nsman's CronJob could not be looked for") {
		t.Errorf("a dry run that may not list CronJobs: exit %d, want 0, its own flags and a warning\n%s", denied.Code, denied.Stderr)
	}
	// Anyone may label a CronJob as nsman's: one whose pods may not act as
	// nsman is not taken unasked, and makes no second installation.
	createSweepCronJob(t, guarded, "nsman", "default", "sweep", "--protected-namespaces=default")
	if fake := laptop("--dry-run", "-l", sel, "--config-from=auto"); fake.Code != 0 || !strings.Contains(fake.Stderr, "dry run as CronJob "+installed+"/nsman") {
		t.Errorf("beside a CronJob labelled as nsman's by a tenant: exit %d, want the installed one taken\n%s", fake.Code, fake.Stderr)
	}
	// Two installations: which one is not guessed.
	bindAsNsman(t, target, "nsman-b")
	createSweepCronJob(t, target, "nsman-b", "nsman-b", "sweep")
	two := laptop("--dry-run", "--config-from=auto", "-l", sel)
	if two.Code != 2 || !strings.Contains(two.Stderr, installed+"/nsman") || !strings.Contains(two.Stderr, target+"/nsman-b") {
		t.Errorf("two nsman CronJobs: exit %d, want 2 and both named\n%s", two.Code, two.Stderr)
	}
}
