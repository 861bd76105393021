package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nsman/nsman/doctor"
	"github.com/nsman/nsman/explain"
	"github.com/nsman/nsman/internal/printer"
)

// The golden files of what nsman explain, nsman doctor and nsman validate
// print, a file a format (text.golden, wide.golden, name.golden; validate's
// stderr in text.stderr.golden), so that a change in what users read is
// seen in review. `make docs` (go test ./cmd -run
// 'TestExplainGolden|TestDoctorGolden|TestValidateGolden' -update)
// rewrites them.
var (
	explainGoldenDir  = filepath.Join("testdata", "explain")
	doctorGoldenDir   = filepath.Join("testdata", "doctor")
	validateGoldenDir = filepath.Join("testdata", "validate")
)

// TestExplainGolden fails when what nsman explain prints of a namespace
// stuck in Terminating, or of one that is not being deleted, differs from
// its golden file.
func TestExplainGolden(t *testing.T) {
	for _, c := range []struct {
		file, format string
		r            explain.Report
	}{
		{"text.golden", printer.Text, goldenExplain()},
		{"wide.golden", printer.Wide, goldenExplain()},
		{"name.golden", printer.Name, goldenExplain()},
		{"active_text.golden", printer.Text, goldenExplainActive()},
		{"active_wide.golden", printer.Wide, goldenExplainActive()},
	} {
		var out bytes.Buffer
		if err := printExplain(&out, c.format, c.r); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join(explainGoldenDir, c.file), "nsman explain -o "+c.format+" ("+c.file+")", out.Bytes())
	}
}

// goldenExplain is a namespace stuck in Terminating with every part of
// explain's report: an owner, a rule that deleted it before, conditions,
// its own finalizers, objects left with finalizers, an unavailable
// APIService, what could not be read and the steps to unblock it.
func goldenExplain() explain.Report {
	created := metav1.NewTime(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	deleted := metav1.NewTime(time.Date(2026, 11, 24, 9, 12, 3, 0, time.UTC))
	return explain.Report{
		Namespace: "preview-4711", Cluster: explain.Cluster{Kubeconfig: "/home/dev/.kube/config", Context: "staging"}, Phase: "Terminating",
		Created: created, DeletionTimestamp: &deleted,
		Conditions: []corev1.NamespaceCondition{
			{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/cleanup in 2 resource instances", LastTransitionTime: metav1.NewTime(deleted.Add(5 * time.Second))},
			{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionTrue, Reason: "DiscoveryFailed", Message: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.example.com/v1beta1", LastTransitionTime: metav1.NewTime(deleted.Add(4 * time.Second))},
		},
		Finalizers: []string{"kubernetes"},
		Remaining: []explain.Resource{
			{Resource: "widgets.example.com", Count: 2, Finalized: []explain.Object{{Name: "w1", Finalizers: []string{"example.com/cleanup"}}, {Name: "w2", Finalizers: []string{"example.com/cleanup"}}}},
			{Resource: "configmaps", Count: 1},
		},
		Unlisted:               []explain.Unlisted{{What: "gadgets.example.com", Error: "forbidden: you may not list them"}},
		UnavailableAPIServices: []explain.APIService{{Name: "v1beta1.metrics.example.com", Service: "monitoring/metrics", Reason: "FailedDiscoveryCheck", Message: "no response from https://10.0.0.1:443"}},
		Unblock: []explain.Step{
			{Holds: "the APIService v1beta1.metrics.example.com is unavailable", Unblock: "make monitoring/metrics answer, or delete the APIService if nothing serves it any more"},
			{Holds: "2 widgets.example.com hold the finalizer example.com/cleanup (w1, w2)", Unblock: "its controller removes it once it has cleaned up: make it run",
				Commands: []string{"kubectl --kubeconfig /home/dev/.kube/config --context staging -n preview-4711 patch widgets.example.com w1 w2 --type=merge -p '{\"metadata\":{\"finalizers\":null}}'"},
				Warning:  "skips whatever the controller would have cleaned up outside the cluster"},
		},
		Owner:    &explain.Owner{Ref: "applications.argoproj.io/argocd/preview-4711", By: "argocd.argoproj.io/tracking-id", Presence: explain.OwnerGone},
		CameBack: []explain.CameBack{{Rule: "namespace-manager/previews", Policy: "delete after 7 days", Action: "DELETE", Deleted: time.Date(2026, 11, 17, 8, 0, 0, 0, time.UTC)}},
	}
}

// goldenExplainActive is a namespace not being deleted whose owner exists
// and that came back after a rule deleted it.
func goldenExplainActive() explain.Report {
	return explain.Report{
		Namespace: "pr-12", Phase: "Active", Created: metav1.NewTime(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)),
		Owner:    &explain.Owner{Ref: "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-12", By: "kustomize.toolkit.fluxcd.io/name", Presence: explain.OwnerExists},
		CameBack: []explain.CameBack{{Rule: "namespace-manager/previews", Policy: "owner gone", Action: "DELETE", Deleted: time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)}},
	}
}

// TestDoctorGolden fails when what nsman doctor prints of a report with
// every check, passed, warned and failed, differs from its golden file.
func TestDoctorGolden(t *testing.T) {
	r := goldenDoctor()
	for name := range doctor.About {
		if !strings.Contains(printerNames(r), "|"+name+"|") {
			t.Errorf("goldenDoctor has no check %s: give it one", name)
		}
	}
	for _, format := range []string{printer.Text, printer.Wide, printer.Name} {
		var out bytes.Buffer
		if err := printDoctor(&out, format, r); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join(doctorGoldenDir, format+".golden"), "nsman doctor -o "+format, out.Bytes())
	}
}

// printerNames are r's checks' names, each between bars.
func printerNames(r doctor.Report) string {
	var b strings.Builder
	for _, ch := range r.Checks {
		b.WriteString("|" + ch.Name + "|")
	}
	return b.String()
}

// goldenDoctor is a doctor report with every check: most pass, two warn,
// one fails with a fix, details under several.
func goldenDoctor() doctor.Report {
	return doctor.Report{OK: false, Checks: []doctor.Check{
		{Name: "apiServer", Status: doctor.OK, Message: "Kubernetes v1.31.2 (nsman needs 1.30 or later)", Details: []string{}},
		{Name: "crd", Status: doctor.OK, Message: "nsman's CRD, as this binary's", Details: []string{}},
		{Name: "permissions", Status: doctor.Failed, Message: "nsman/nsman may not do 1 of the 24 things a sweep does", Details: []string{"patch deployments.apps: SCALE_DOWN and SLEEP"},
			Fix: "apply deploy/base/rbac.yaml (or helm upgrade) to grant what is missing"},
		{Name: "ownerKinds", Status: doctor.Warning, Message: "1 kind served that nsman may not list: OWNER_GONE cannot tell whether its owners exist", Details: []string{"applications.argoproj.io: served, may not list", "kustomizations.kustomize.toolkit.fluxcd.io: not installed"}},
		{Name: "namespaces", Status: doctor.OK, Message: "nsman runs in nsman (nsman/nsman)", Details: []string{"trusted: nsman", "protected: default, kube-node-lease, kube-public, kube-system, nsman"}},
		{Name: "webhooks", Status: doctor.OK, Message: "webhooks may reach public addresses only", Details: []string{}},
		{Name: "cronJob", Status: doctor.Warning, Message: "nsman/nsman runs its sweeps with --dry-run: nothing is acted on", Details: []string{}, Fix: "remove --dry-run from its arguments once its reports are what you want"},
		{Name: "admissionPolicy", Status: doctor.OK, Message: "nsman-fence denies what nsman/nsman may not do", Details: []string{}},
		{Name: "javaOperator", Status: doctor.OK, Message: "the Java operator does not run", Details: []string{}},
	}}
}

// TestValidateGolden fails when what nsman validate prints of a tree of
// manifests (valid, invalid, a rule, a deactivated one, one without a
// name, other kinds, a Helm chart's templates) differs from its golden
// file: text's stdout and stderr, and -o name.
func TestValidateGolden(t *testing.T) {
	dir := t.TempDir()
	writeTestFiles(t, dir, goldenManifests())
	golden, err := filepath.Abs(validateGoldenDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, format := range []string{printer.Text, printer.Name} {
		code, stdout, stderr := runValidate(t, "", "-f", ".", "-R", "-o", format)
		if code != ExitFailed {
			t.Errorf("-o %s: exit %d, want %d", format, code, ExitFailed)
		}
		checkGolden(t, filepath.Join(golden, format+".golden"), "nsman validate -o "+format, []byte(stdout))
		if format == printer.Text {
			checkGolden(t, filepath.Join(golden, "text.stderr.golden"), "nsman validate's stderr", []byte(stderr))
		}
	}
}

// goldenManifests are the files of TestValidateGolden, by path.
func goldenManifests() map[string]string {
	unnamed := strings.Replace(manifestInvalidManager, "  name: broken\n", "", 1)
	return map[string]string{
		"managers.yaml":          yamlDocs(manifestNamespace, manifestValidManager, manifestInvalidManager, manifestJob),
		"rules/rule.yaml":        manifestInvalidRule,
		"rules/ok.yaml":          manifestValidRule,
		"off.yaml":               strings.Replace(manifestInvalidManager, "spec:\n", "spec:\n  deactivated: true\n", 1),
		"unnamed.json.yaml":      unnamed,
		"chart/Chart.yaml":       "apiVersion: v2\nname: previews\nversion: 0.1.0\n",
		"chart/templates/m.yaml": "{{ .Values.broken }}\n",
	}
}

// nsman validate -o json (and yaml, its mirror) prints every file read,
// the directories skipped, each problem, error or warning, with its file,
// document, manager and field, the files that could not be read, and the
// counts; nothing on stderr but the error that sets the exit code, which
// stays as with text. -o wide is refused, naming the formats it takes.
func TestValidateOutput(t *testing.T) {
	dir := t.TempDir()
	files := goldenManifests()
	files["broken.yaml"] = yamlDocs(manifestValidManager, "kind: NamespaceManager\nspec: [unclosed\n")
	writeTestFiles(t, dir, files)
	t.Chdir(dir)
	for _, format := range []string{printer.JSON, printer.YAML} {
		code, stdout, stderr := runValidate(t, "", "-f", ".", "-R", "-o", format)
		if code != ExitUsage || !strings.HasPrefix(stderr, "nsman: broken.yaml: document 2: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("-o %s: exit %d, stderr %q; want %d and the unreadable file's error alone", format, code, stderr, ExitUsage)
		}
		var v printer.Validation
		if err := sigsyaml.UnmarshalStrict([]byte(stdout), &v); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, stdout)
		}
		errs, warnings := 0, 0
		for _, p := range v.Problems {
			switch p.Severity {
			case printer.SeverityError:
				errs++
			case printer.SeverityWarning:
				warnings++
			}
		}
		want := printer.Counts{Files: 7, Managers: 7, Valid: 3, Invalid: 3, Deactivated: 1, OtherObjects: 3}
		if v.Version != "nsman.validate/v1" || len(v.Files) != 7 || strings.Join(v.Skipped, ",") != "chart/templates" || v.Counts != want || errs != 10 || warnings != 3 ||
			len(v.Unreadable) != 1 || v.Unreadable[0].File != "broken.yaml" {
			t.Errorf("-o %s: %+v; want counts %+v, 10 errors, 3 warnings, broken.yaml unreadable", format, v, want)
		}
		first := printer.Problem{File: "managers.yaml", Document: "document 3", Namespace: "ci", Name: "broken", Field: "spec.policies[0].condition.params.initialDelaySeconds",
			Message: "Invalid value: -5: must be between 0 and 2147483647", Severity: printer.SeverityError}
		if len(v.Problems) == 0 || v.Problems[0] != first {
			t.Errorf("-o %s: first problem %+v, want %+v", format, v.Problems[0], first)
		}
	}
	code, stdout, stderr := runValidate(t, "", "-f", "managers.yaml", "-o", "name")
	if code != ExitFailed || stdout != "namespacemanager.k8s.consol.de/ci/broken\n" || stderr != "nsman: 1 NamespaceManager invalid\n" {
		t.Errorf("-o name: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runValidate(t, "", "-f", "managers.yaml", "-o", "wide"); code != ExitUsage || !strings.Contains(stderr, `-o "wide": want text, json, yaml, name`) {
		t.Errorf("-o wide: exit %d, stderr %q; want refused", code, stderr)
	}
}
