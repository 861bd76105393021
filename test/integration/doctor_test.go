package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/doctor"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/fixtures/original"
	"github.com/nsman/nsman/test/nsmantest"
)

// doctorRun is one nsman doctor -o json.
type doctorRun struct {
	code   int
	report doctor.Report
	stderr string
}

func (r doctorRun) check(t *testing.T, name string) doctor.Check {
	t.Helper()
	for _, c := range r.report.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.report)
	return doctor.Check{}
}

// want checks that the check name has status and that its message and
// its details together hold every one of words.
func (r doctorRun) want(t *testing.T, name string, status doctor.Status, words ...string) {
	t.Helper()
	c := r.check(t, name)
	all := c.Message + "\n" + strings.Join(c.Details, "\n")
	if c.Status != status {
		t.Errorf("check %s: %s (%s), want %s", name, c.Status, all, status)
	}
	for _, w := range words {
		if !strings.Contains(all, w) {
			t.Errorf("check %s says %q, want it to say %q", name, all, w)
		}
	}
	if status != doctor.OK && c.Fix == "" {
		t.Errorf("check %s: %s without a fix", name, status)
	}
}

func runDoctor(t *testing.T, kubeconfig string, args ...string) doctorRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	all := append([]string{"doctor", "-o", "json", "--kubeconfig", kubeconfig}, args...)
	r := doctorRun{code: cmd.Execute(t.Context(), all, &stdout, &stderr), stderr: stderr.String()}
	if err := json.Unmarshal(stdout.Bytes(), &r.report); err != nil {
		t.Fatalf("nsman %v: exit %d, not JSON (%v):\n%s\nstderr: %s", all, r.code, err, stdout.String(), r.stderr)
	}
	if r.report.OK != (r.code == cmd.ExitOK) {
		t.Errorf("nsman %v: exit %d but ok %v", all, r.code, r.report.OK)
	}
	return r
}

// runDoctorUntil runs nsman doctor until its check name's message says
// says, as RBAC a test just changed takes a moment to be in force, and
// returns that run (the last one, if it never does).
func runDoctorUntil(t *testing.T, kubeconfig, name, says string, args ...string) doctorRun {
	t.Helper()
	var r doctorRun
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r = runDoctor(t, kubeconfig, args...)
		if strings.Contains(r.check(t, name).Message, says) || time.Now().After(deadline) {
			return r
		}
	}
}

// ownControlPlane starts a control plane for t alone, stopped when t
// ends, and returns it with a context that bounds t to 5 minutes.
func ownControlPlane(t *testing.T, opts cluster.Options) (context.Context, *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start a control plane of its own: %v", err)
	}
	t.Cleanup(c.Stop)
	return ctx, c
}

// TestDoctorSaysWhatToFix runs nsman doctor on a control plane of its own
// through what a new install goes through: no CRD, the original
// operator's CRD, an nsman CRD older than the binary, a ServiceAccount
// missing a permission (as that ServiceAccount in its pod, and from a
// laptop, where it finds the CronJob), and then all well.
func TestDoctorSaysWhatToFix(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.APITier})
	env, err := nsmantest.NewEnv(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAMESPACE", "")
	admin := c.Kubeconfig

	// No CRD, no install: the CRD fails, the namespace is not known.
	r := runDoctor(t, admin)
	if r.code != cmd.ExitFailed {
		t.Errorf("no CRD: exit %d, want %d (%s)", r.code, cmd.ExitFailed, r.stderr)
	}
	r.want(t, "crd", doctor.Failed, "not installed")
	r.want(t, "apiServer", doctor.OK, "nsman needs 1.30 or later")
	// Nothing is trusted then: no default names a namespace that may not
	// exist.
	r.want(t, "namespaces", doctor.Warning, "not known", "protected (never acted on): kube-system, kube-public, kube-node-lease, default, namespace-manager",
		"trusted (may target other namespaces, may hold rules): none")
	r.want(t, "javaOperator", doctor.OK, "does not run")
	r.want(t, "webhooks", doctor.OK, "tenants' managers: public addresses and Services of their own namespace")
	// No GitOps project's CRD: each owner kind not installed, no fault.
	r.want(t, "ownerKinds", doctor.OK, "not installed: Application, Kustomization, HelmRelease")
	// An admin's own permissions say nothing of nsman's.
	r.want(t, "permissions", doctor.Warning, fmt.Sprintf("you may do all %d things a sweep does", len(nsmancluster.Permissions)))
	if fix := r.check(t, "permissions").Fix; !strings.Contains(fix, "not nsman's") {
		t.Errorf("permissions fix %q, want it to say these are not nsman's", fix)
	}

	// The original operator's CRD: what it cannot hold, named.
	env.Apply(t, original.Read(t, original.CRDFile))
	r = runDoctor(t, admin)
	// A sweep works under it: a warning, naming what it cannot hold.
	r.want(t, "crd", doctor.Warning, "original operator's CRD",
		"spec.policies[].condition.params.minChecks: pruned (minChecks)",
		"spec.policies[].final: pruned (stages)",
		"spec.policies[].condition.type: PODS_FAILED refused (the PODS_FAILED condition)",
		"spec.enforce: pruned", "spec.namePatterns: pruned (rules)")
	if c := r.check(t, "crd"); slices.ContainsFunc(c.Details, func(d string) bool { return strings.HasPrefix(d, "status") }) {
		t.Errorf("original CRD: details %q name status, which nsman keeps in an annotation there", c.Details)
	}

	// An nsman CRD of an older release: without final, PODS_FAILED, EXPIRES,
	// IDLE, OWNER_GONE, SLEEP and warnBefore.
	current := nsmantest.CRD(t)
	env.Apply(t, staleCRD(t))
	r = runDoctor(t, admin)
	r.want(t, "crd", doctor.Failed, "older than this nsman", "spec.policies[].final: pruned (stages)", "PODS_FAILED refused", "EXPIRES refused (the EXPIRES condition)",
		"IDLE refused (the IDLE condition)", "OWNER_GONE refused (the OWNER_GONE condition)", "spec.policies[].action.type: SLEEP refused",
		"spec.policies[].warnBefore: pruned")
	if r.code != cmd.ExitFailed {
		t.Errorf("stale CRD: exit %d, want %d", r.code, cmd.ExitFailed)
	}
	if c := r.check(t, "crd"); len(c.Details) != 7 {
		t.Errorf("stale CRD: details %q, want exactly the seven things it lacks", c.Details)
	}

	// nsman's CRD, and an install whose ClusterRole lacks patch on
	// workloads: as its ServiceAccount in its pod, then from a laptop.
	env.Apply(t, current)
	rbac, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "base", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rbac = bytes.ReplaceAll(rbac, []byte("namespace-manager"), []byte(installNamespace))
	narrow := bytes.Replace(rbac, []byte("resources: [deployments, statefulsets]\n    verbs: [list, patch]"), []byte("resources: [deployments, statefulsets]\n    verbs: [list]"), 1)
	if bytes.Equal(narrow, rbac) {
		t.Fatal("deploy/base/rbac.yaml: the workloads rule is not where the test looks for it")
	}
	env.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+installNamespace+"\n"))
	env.Apply(t, narrow)
	nsmantest.InstallGitOpsCRDs(t, env.Dynamic)
	saCfg, err := c.ServiceAccountConfig(ctx, installNamespace, nsmantest.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := cluster.WriteKubeconfig(saKubeconfig, saCfg); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAMESPACE", installNamespace)
	r = runDoctorUntil(t, saKubeconfig, "permissions", fmt.Sprintf("you may not do 2 of the %d", len(nsmancluster.Permissions)))
	r.want(t, "permissions", doctor.Failed, fmt.Sprintf("you may not do 2 of the %d", len(nsmancluster.Permissions)), "patch deployments.apps (SCALE_DOWN and restore)", "patch statefulsets.apps")
	// The Argo CD and Flux CRDs installed: served, and the ClusterRole lets
	// nsman list each.
	r.want(t, "ownerKinds", doctor.OK, "you can see Application, Kustomization, HelmRelease", "Application (applications.argoproj.io/v1alpha1): served, and you may list it")
	r.want(t, "namespaces", doctor.OK, "nsman runs in "+installNamespace+" (its pod), which is protected and trusted", "may hold rules): "+installNamespace+"\n")
	// Its ServiceAccount may not read CRDs: discovery tells nsman's.
	r.want(t, "crd", doctor.Warning, "nsman's CRD", "may not get customresourcedefinitions")
	t.Setenv("POD_NAMESPACE", "")

	cronJob := `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nsman
  namespace: ` + installNamespace + `
  labels: {app.kubernetes.io/name: nsman}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          serviceAccountName: nsman
          restartPolicy: Never
          containers:
            - name: nsman
              image: ghcr.io/nsman/nsman:0.1.0
              args: [sweep, --trusted-namespaces=platform, --webhook-allow=hooks.example.com]
`
	env.Apply(t, []byte(cronJob))
	r = runDoctorUntil(t, admin, "permissions", "ServiceAccount "+installNamespace+fmt.Sprintf("/nsman may not do 2 of the %d", len(nsmancluster.Permissions)))
	r.want(t, "permissions", doctor.Failed, "ServiceAccount "+installNamespace+fmt.Sprintf("/nsman may not do 2 of the %d", len(nsmancluster.Permissions)), "patch deployments.apps")
	r.want(t, "namespaces", doctor.Failed, "trusted namespace(s) that do not exist: platform; nsman runs in "+installNamespace+" (CronJob "+installNamespace+"/nsman)", "trusted (may target other namespaces, may hold rules): platform\n",
		"trusted namespace platform does not exist")
	r.want(t, "webhooks", doctor.OK, "receivers --webhook-allow admits: hooks.example.com")
	r.want(t, "crd", doctor.OK, "as this nsman")
	r.want(t, "cronJob", doctor.OK, "CronJob "+installNamespace+"/nsman runs ghcr.io/nsman/nsman:0.1.0", "no sweep has started yet")
	// No admission policy fences its ServiceAccount yet: only RBAC does.
	r.want(t, "admissionPolicy", doctor.Warning, "no ValidatingAdmissionPolicy bound to deny fences system:serviceaccount:"+installNamespace+":nsman")
	// Suspended, in dry-run mode, its last sweep failed: warnings, each said.
	env.Apply(t, []byte(strings.Replace(strings.Replace(cronJob, "spec:\n  schedule:", "spec:\n  suspend: true\n  schedule:", 1), "args: [sweep,", "args: [sweep, --dry-run,", 1)))
	cj, err := c.Admin.BatchV1().CronJobs(installNamespace).Get(ctx, "nsman", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: time.Now().Add(-10 * time.Minute)}
	cj.Status.LastSuccessfulTime = &metav1.Time{Time: time.Now().Add(-20 * time.Minute)}
	if _, err := c.Admin.BatchV1().CronJobs(installNamespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = runDoctor(t, admin)
	r.want(t, "cronJob", doctor.Warning, "suspended: no sweep starts", "every sweep is a dry run", "has not succeeded")
	env.Apply(t, []byte(cronJob))
	cj, err = c.Admin.BatchV1().CronJobs(installNamespace).Get(ctx, "nsman", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cj.Status.LastSuccessfulTime = &metav1.Time{Time: time.Now().Add(-9 * time.Minute)}
	if _, err := c.Admin.BatchV1().CronJobs(installNamespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A CronJob whose ServiceAccount does not exist starts no pod.
	env.Apply(t, []byte(strings.NewReplacer("name: nsman\n  namespace", "name: ghost\n  namespace", "serviceAccountName: nsman", "serviceAccountName: ghost").Replace(cronJob)))
	r = runDoctor(t, admin, "--config-from", installNamespace+"/ghost")
	r.want(t, "cronJob", doctor.Failed, "ServiceAccount "+installNamespace+"/ghost does not exist")
	if err := c.Admin.BatchV1().CronJobs(installNamespace).Delete(ctx, "ghost", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The CRD is judged against this binary, which may not be the
	// CronJob's release: it says which each is.
	env.Apply(t, staleCRD(t))
	r = runDoctor(t, admin)
	r.want(t, "crd", doctor.Failed, "older than this nsman", "the CronJob runs ghcr.io/nsman/nsman:0.1.0, this is nsman ")
	env.Apply(t, current)
	// A flag given here wins over the CronJob's.
	// A trusted namespace that does not exist fails: whoever creates it
	// gets trusted managers and rules.
	r = runDoctor(t, admin, "--trusted-namespaces", "ops")
	r.want(t, "namespaces", doctor.Failed, "trusted namespace(s) that do not exist: ops", "may hold rules): ops\n", "trusted namespace ops does not exist")
	if r.code != cmd.ExitFailed {
		t.Errorf("a trusted namespace that does not exist: exit %d, want %d", r.code, cmd.ExitFailed)
	}

	// Someone who may find the CronJob but not review others' permissions
	// gets their own, and is told so.
	env.Apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: nsman-viewer}
rules:
  - apiGroups: [batch]
    resources: [cronjobs]
    verbs: [list]
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterrolebindings, clusterroles]
    verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: nsman-viewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nsman-viewer}
subjects:
  - {kind: ServiceAccount, name: viewer, namespace: `+installNamespace+`}
`))
	viewerCfg, err := c.ServiceAccountConfig(ctx, installNamespace, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	viewer := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := cluster.WriteKubeconfig(viewer, viewerCfg); err != nil {
		t.Fatal(err)
	}
	r = runDoctorUntil(t, viewer, "namespaces", "(CronJob "+installNamespace+"/nsman)")
	// It may list CronJobs (to find nsman's), one of the things a sweep does.
	r.want(t, "permissions", doctor.Warning, "you may not create subjectaccessreviews", fmt.Sprintf("you may not do %d of the %d", len(nsmancluster.Permissions)-1, len(nsmancluster.Permissions)))
	// It may not list namespaces: whether the trusted ones exist is not told.
	r.want(t, "namespaces", doctor.OK, "(CronJob "+installNamespace+"/nsman)", "whether trusted namespace platform exists could not be told")
	// Nor may it list the owner kinds.
	r.want(t, "ownerKinds", doctor.Warning, "you cannot see Application, Kustomization, HelmRelease", "HelmRelease (helmreleases.helm.toolkit.fluxcd.io/v2): served, but you may not list it", "you may not create subjectaccessreviews")

	// The Java operator still running beside nsman fails; scaled to zero,
	// it is only to be removed.
	operator := func(replicas int) []byte {
		return []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: namespace-manager}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: namespace-manager-operator, namespace: namespace-manager}
spec:
  replicas: %d
  selector: {matchLabels: {app: namespace-manager}}
  template:
    metadata: {labels: {app: namespace-manager}}
    spec:
      containers: [{name: operator, image: progaddict/k8s-namespace-manager:0.2}]
`, replicas))
	}
	env.Apply(t, operator(1))
	r = runDoctor(t, admin)
	r.want(t, "javaOperator", doctor.Failed, "namespace-manager/namespace-manager-operator runs")
	env.Apply(t, operator(0))

	// All well.
	policy, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "base", "admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env.Apply(t, bytes.ReplaceAll(policy, []byte("system:serviceaccount:namespace-manager:nsman"), []byte("system:serviceaccount:"+installNamespace+":nsman")))
	env.Apply(t, rbac)
	env.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: platform\n"))
	r = runDoctorUntil(t, admin, "permissions", fmt.Sprintf("may do all %d", len(nsmancluster.Permissions)))
	r.want(t, "javaOperator", doctor.OK, "does not run", "scaled to zero")
	r.want(t, "cronJob", doctor.OK, "succeeded")
	r.want(t, "admissionPolicy", doctor.OK, "the ValidatingAdmissionPolicy nsman (binding nsman, Deny) fences system:serviceaccount:"+installNamespace+":nsman")
	r.want(t, "namespaces", doctor.OK, "nsman runs in "+installNamespace)
	if r.code != cmd.ExitOK {
		t.Errorf("all well: exit %d (%s), report %+v", r.code, r.stderr, r.report)
	}
	r.want(t, "permissions", doctor.OK, "ServiceAccount "+installNamespace+fmt.Sprintf("/nsman may do all %d", len(nsmancluster.Permissions)))
	r.want(t, "ownerKinds", doctor.OK, "ServiceAccount "+installNamespace+"/nsman can see Application, Kustomization, HelmRelease")

	// The text report: a line per check, the verdict last.
	var stdout, stderr bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"doctor", "--kubeconfig", admin}, &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != cmd.ExitOK || !strings.HasSuffix(stdout.String(), "\nall is well\n") {
		t.Errorf("text report: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// staleCRD is nsman's CRD as an older release had it: without stages
// (policies[].final), the PODS_FAILED, EXPIRES, IDLE and OWNER_GONE
// conditions, the SLEEP action and warnings (policies[].warnBefore),
// whose rules go with them.
func staleCRD(t *testing.T) []byte {
	t.Helper()
	current := nsmantest.CRD(t)
	stale := current
	for _, r := range [][2]string{
		{"enum: [TTL, PODS_SUCCEED, PODS_FAILED, EXPIRES, IDLE, OWNER_GONE]", "enum: [TTL, PODS_SUCCEED]"},
		{"enum: [DELETE, SCALE_DOWN, WEBHOOK, SLEEP]", "enum: [DELETE, SCALE_DOWN, WEBHOOK]"},
		{`                    x-kubernetes-validations:
                      - rule: "!(has(self.final) && self.final && self.action.type == 'SLEEP')"
                        fieldPath: .final
                        reason: FieldValueInvalid
                        message: "a SLEEP policy is never final: it sleeps and wakes as its condition and windows say"
                      - rule: "!has(self.warnBefore) || self.condition.type in ['TTL', 'EXPIRES', 'IDLE']"
                        fieldPath: .warnBefore
                        reason: FieldValueForbidden
                        message: "only a TTL, EXPIRES or IDLE condition has a due time to warn before"
`, ""},
	} {
		older := bytes.Replace(stale, []byte(r[0]), []byte(r[1]), 1)
		if bytes.Equal(older, stale) {
			t.Fatalf("deploy/base/crd.yaml: no %q where the test looks for it", r[0])
		}
		stale = older
	}
	return dropProperty(t, dropProperty(t, stale, "final:"), "warnBefore:")
}

// dropProperty removes from a CRD manifest the property whose line (after
// indentation) is key, and every line indented below it.
func dropProperty(t *testing.T, manifest []byte, key string) []byte {
	t.Helper()
	lines := strings.Split(string(manifest), "\n")
	var out []string
	indent := -1
	for _, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		depth := len(l) - len(trimmed)
		switch {
		case indent >= 0 && (depth > indent || trimmed == ""):
			continue
		case indent >= 0:
			indent = -1
		}
		if trimmed == key {
			indent = depth
			continue
		}
		out = append(out, l)
	}
	if len(out) == len(lines) {
		t.Fatalf("no property %q in the manifest", key)
	}
	return []byte(strings.Join(out, "\n"))
}
