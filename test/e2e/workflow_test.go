package e2e

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestActionPassesInputsOnlyByEnv: every input of action.yml reaches a step
// as an environment variable, whole, and no step's shell holds an
// expression (script injection): each run is a call of a script of the
// repository, which the tests run.
func TestActionPassesInputsOnlyByEnv(t *testing.T) {
	a := readAction(t)
	if a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 {
		t.Fatalf("runs.using %q with %d steps: want a composite action", a.Runs.Using, len(a.Runs.Steps))
	}
	if v := a.Inputs["version"]; !v.Required || v.Default != nil {
		t.Errorf("input version: required %v, default %v; want required with no default (no latest)", v.Required, v.Default)
	}
	if d := a.Inputs["dry-run"].Default; d == nil || *d != "true" {
		t.Errorf("input dry-run defaults to %v, want \"true\"", d)
	}
	passed := map[string]bool{}
	for i, step := range a.Runs.Steps {
		if strings.Contains(step.Run, "${{") {
			t.Errorf("step %d's run %q holds an expression", i, step.Run)
		}
		m := runScript.FindStringSubmatch(step.Run)
		if m == nil {
			t.Errorf("step %d runs %q: want \"$GITHUB_ACTION_PATH/SCRIPT\"", i, step.Run)
			continue
		}
		if fi, err := os.Stat(filepath.Join(nsmantest.RepoRoot(), m[1])); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("step %d runs %s: not an executable file of the repository (%v)", i, m[1], err)
		}
		for k, v := range step.Env {
			for _, e := range expression.FindAllStringSubmatch(v, -1) {
				name, isInput := strings.CutPrefix(e[1], "inputs.")
				switch {
				case isInput && v == e[0]:
					passed[name] = true
				case e[1] == "runner.temp":
				default:
					t.Errorf("step %d: env %s=%q: want an input whole, or runner.temp", i, k, v)
				}
			}
		}
	}
	for name := range a.Inputs {
		if !passed[name] {
			t.Errorf("input %s is passed to no step", name)
		}
	}
	for _, name := range []string{"exit-code", "report"} {
		if _, ok := a.Outputs[name]; !ok {
			t.Errorf("no output %s", name)
		}
	}
}

// TestGitLabTemplateIsTheScripts: the template's script is the action's
// scripts, line for line (less their #! line), so that the two behave
// alike; its job sets no variables, which would hide a pipeline's; and its
// artifacts are the reports sweep.sh writes.
func TestGitLabTemplateIsTheScripts(t *testing.T) {
	job := readGitLabJob(t)
	scripts := []string{"install.sh", "sweep.sh"}
	if len(job.Script) != len(scripts) {
		t.Fatalf("the template's script has %d entries, want %d: %v", len(job.Script), len(scripts), scripts)
	}
	for i, name := range scripts {
		data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "ci", name))
		if err != nil {
			t.Fatal(err)
		}
		_, want, _ := strings.Cut(string(data), "\n")
		if job.Script[i] != want {
			t.Errorf("script entry %d is not deploy/ci/%s less its first line: copy it, indented by 6 spaces", i, name)
		}
	}
	if len(job.Variables) != 0 {
		t.Errorf("the job sets variables %v: they would hide the including pipeline's top-level ones", job.Variables)
	}
	if job.Artifacts.When != "always" || !slices.Contains(job.Artifacts.Paths, "nsman-report.txt") || !slices.Contains(job.Artifacts.Paths, "nsman-report.json") {
		t.Errorf("artifacts %+v: want nsman-report.txt and nsman-report.json, always", job.Artifacts)
	}
}

// TestActionExamplesLint: actionlint checks each workflow of docs/ci.md that
// uses the action, with the action as the repository's action.yml: its
// inputs exist, the required ones are given, and the action's metadata
// parses. (actionlint lints workflows, not an action's own file.)
func TestActionExamplesLint(t *testing.T) {
	dir, err := cluster.ToolDir("lint", "github.com/rhysd/actionlint", "actionlint")
	if err != nil {
		t.Fatal(err)
	}
	actionlint := filepath.Join(dir, "actionlint")
	if _, err := os.Stat(actionlint); err != nil {
		t.Fatalf("%s not found: make test-e2e (or make lint) builds it", actionlint)
	}
	doc, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	action, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// actionlint resolves uses: ./ in a project, a directory with .git.
	workflows := filepath.Join(repo, ".github", "workflows")
	for _, d := range []string{workflows, filepath.Join(repo, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "action.yml"), action, 0o644); err != nil {
		t.Fatal(err)
	}
	uses := regexp.MustCompile(`uses: nsman/nsman@\S+`)
	var files []string
	for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if !uses.MatchString(m[1]) {
			continue
		}
		f := filepath.Join(workflows, "example-"+string(rune('a'+i))+".yml")
		if err := os.WriteFile(f, []byte(uses.ReplaceAllString(m[1], "uses: ./")), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("docs/ci.md has no yaml example that uses nsman/nsman@")
	}
	cmd := exec.Command(actionlint, files...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint on docs/ci.md's examples: %v\n%s", err, out)
	}
}

// workflowSetup installs nsman's CRD and RBAC, builds nsman and serves it
// as a release, and makes a namespace with two managers: one labelled
// ci=yes that is due (it expired in 2020) and deletes the namespace, and
// one that waits an hour.
func workflowSetup(t *testing.T) (*nsmantest.Env, *release, string) {
	t.Helper()
	env, err := nsmantest.Setup(t.Context(), shared, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	rel := serveRelease(t, nsmanBinary(t), nil)
	ns := shared.Namespace(t)
	env.Apply(t, []byte(`apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: `+ns+`
  namespace: `+ns+`
  labels: {ci: "yes"}
spec:
  policies:
    - name: expired
      condition: {type: EXPIRES, params: {at: "2020-01-01T00:00:00Z"}}
      action: {type: DELETE}
---
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: later
  namespace: `+ns+`
spec:
  namespace: `+ns+`
  policies:
    - name: in_an_hour
      condition: {type: TTL, params: {ttlSeconds: 3600}}
      action: {type: DELETE}
`))
	return env, rel, ns
}

// refusingDeletes is a kubeconfig of nsman's ServiceAccount through a proxy
// that refuses the DELETE of namespace ns, as an admission webhook would.
func refusingDeletes(t *testing.T, env *nsmantest.Env, ns string) string {
	return env.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete && r.URL.Path == "/api/v1/namespaces/"+ns {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"admission webhook \"guard\" denied the request","code":409}`))
				return
			}
			rp.ServeHTTP(w, r)
		})
	})
}

// states reads a report, text or JSON, as manager -> state (a text
// report's policies here are one word each).
func states(t *testing.T, data []byte, isJSON bool) map[string]string {
	t.Helper()
	got := map[string]string{}
	if isJSON {
		var rep report.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatalf("report is not JSON: %v\n%s", err, data)
		}
		for _, e := range rep.Entries {
			got[e.Namespace+"/"+e.Name] = string(e.State)
		}
		return got
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 3 && strings.Contains(f[0], "/") {
			got[f[0]] = f[3]
		}
	}
	return got
}

// TestActionSweeps runs the action's steps against the control plane: a dry
// run plans and changes nothing, the inputs select and shape the sweep, and
// nsman's exit status 0, 1 or 2 is the step's and the output exit-code's,
// with the report in the job summary and the report file.
func TestActionSweeps(t *testing.T) {
	env, rel, ns := workflowSetup(t)
	due := ns + "/" + ns
	jobEnv := []string{"NSMAN_DOWNLOAD_URL=" + rel.URL, "KUBECONFIG=" + env.Kubeconfig}
	tests := []struct {
		name    string
		inputs  map[string]string
		jobEnv  []string
		code    int
		states  map[string]string // manager -> state in the report; nil: no report
		json    bool
		deleted bool
		summary string
		hidden  string // what neither the log nor the summary may hold
		noSum   bool   // no summary at all
	}{
		{
			name:    "a dry run by default plans and changes nothing",
			inputs:  map[string]string{"namespace": ns},
			states:  map[string]string{due: "planned", ns + "/later": "waiting"},
			summary: "### nsman sweep (dry run): exit 0",
		},
		{
			name:    "selector, json, kubeconfig and args",
			inputs:  map[string]string{"namespace": ns, "selector": "ci=yes", "output": "json", "kubeconfig": env.Kubeconfig, "args": "--log-level debug\n--at 2019-06-01T00:00:00Z"},
			jobEnv:  []string{"KUBECONFIG="},
			states:  map[string]string{due: "waiting"},
			json:    true,
			summary: "```json\n{",
		},
		{
			name:    "a failed action exits 1",
			inputs:  map[string]string{"namespace": ns, "selector": "ci=yes", "dry-run": "false", "kubeconfig": refusingDeletes(t, env, ns)},
			code:    1,
			states:  map[string]string{due: "failed"},
			summary: "### nsman sweep: exit 1",
		},
		{
			name:    "no cluster exits 2",
			inputs:  map[string]string{"namespace": ns, "kubeconfig": filepath.Join(t.TempDir(), "missing")},
			code:    2,
			summary: "### nsman sweep (dry run): exit 2\n\nthe sweep could not run",
		},
		{
			name:    "dry-run neither true nor false exits 2",
			inputs:  map[string]string{"namespace": ns, "dry-run": "yes"},
			code:    2,
			summary: "exit 2",
		},
		{
			name:    "a notify URL's secret path is not shown",
			inputs:  map[string]string{"namespace": ns, "args": "--notify-url https://hooks.example.com/services/T0/B0/s3cr3t-path?token=s3cr3t-query"},
			states:  map[string]string{due: "planned", ns + "/later": "waiting"},
			summary: "### nsman sweep (dry run): exit 0",
			hidden:  "s3cr3t",
		},
		{
			name:   "no summary",
			inputs: map[string]string{"namespace": ns, "summary": "false"},
			states: map[string]string{due: "planned", ns + "/later": "waiting"},
			noSum:  true,
		},
		{
			name:   "summary neither true nor false exits 2",
			inputs: map[string]string{"namespace": ns, "summary": "no"},
			code:   2,
			noSum:  true,
		},
		{
			name:    "a real run deletes",
			inputs:  map[string]string{"namespace": ns, "selector": "ci=yes", "dry-run": "false"},
			states:  map[string]string{due: "fired"},
			deleted: true,
			summary: "### nsman sweep: exit 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inputs := map[string]string{"version": testVersion}
			maps.Copy(inputs, tt.inputs)
			res := runAction(t, inputs, append(slices.Clone(jobEnv), tt.jobEnv...)...)
			if res.code != tt.code || res.stepsRun != 2 || res.outputs["exit-code"] != strconv.Itoa(tt.code) {
				t.Fatalf("exit %d after %d steps, output exit-code %q; want %d after 2\n%s", res.code, res.stepsRun, res.outputs["exit-code"], tt.code, res.log)
			}
			if tt.noSum && res.summary != "" {
				t.Errorf("summary %q, want none", res.summary)
			}
			if !strings.Contains(res.summary, tt.summary) {
				t.Errorf("summary does not hold %q:\n%s", tt.summary, res.summary)
			}
			if tt.hidden != "" && strings.Contains(res.log+res.summary, tt.hidden) {
				t.Errorf("the log or the summary shows %q:\n%s\n%s", tt.hidden, res.log, res.summary)
			}
			data, err := os.ReadFile(res.outputs["report"])
			if tt.states == nil {
				if len(data) != 0 {
					t.Errorf("report %s: %q, want none", res.outputs["report"], data)
				}
			} else {
				if err != nil {
					t.Fatalf("output report: %v", err)
				}
				if got := states(t, data, tt.json); !maps.Equal(got, tt.states) {
					t.Errorf("report says %v, want %v\n%s", got, tt.states, data)
				}
				if !tt.noSum && !strings.Contains(res.summary, string(data)) {
					t.Errorf("the summary does not hold the report:\n%s", res.summary)
				}
			}
			if got := env.NamespaceGoneOrTerminating(t, ns); got != tt.deleted {
				t.Errorf("namespace deleted: %v, want %v", got, tt.deleted)
			}
		})
	}
}

// TestActionInstallFailsClosed: a binary whose checksum is wrong, missing or
// said twice, a version that is no release tag, or a release that is not
// there, fails the install step with 2, before anything runs: no sweep
// step, no nsman installed.
func TestActionInstallFailsClosed(t *testing.T) {
	bin := nsmanBinary(t)
	tests := []struct {
		name      string
		version   string
		checksums func(string) string
		download  bool // whether anything is downloaded before it fails
	}{
		{"a wrong checksum", testVersion, func(s string) string {
			return strings.Replace(s, thisAsset, "nsman-other", 1) + strings.Repeat("0", 64) + "  " + thisAsset + "\n"
		}, true},
		{"no checksum", testVersion, func(s string) string {
			return regexp.MustCompile(`(?m)^.*  `+thisAsset+`\n`).ReplaceAllString(s, "")
		}, true},
		{"two checksums", testVersion, func(s string) string { return s + strings.Repeat("0", 64) + " *" + thisAsset + "\n" }, true},
		{"a release not there", "v0.0.1", nil, true},
		{"latest", "latest", nil, false},
		{"no version", "", nil, false},
		{"two lines", testVersion + "\n" + testVersion, nil, false},
		{"a path", "v1.2.3/../../x", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := serveRelease(t, bin, tt.checksums)
			inputs := map[string]string{"version": tt.version}
			checkNotInstalled(t, rel, runAction(t, inputs, "NSMAN_DOWNLOAD_URL="+rel.URL), tt.download)
		})
	}
}

// checkNotInstalled: the action's run failed its install step with 2, before
// anything ran, nothing installed; download says whether anything was
// downloaded first.
func checkNotInstalled(t *testing.T, rel *release, res actionRun, download bool) {
	t.Helper()
	if res.code != 2 || res.stepsRun != 1 || res.outputs["exit-code"] != "" || res.summary != "" {
		t.Fatalf("exit %d after %d steps, output exit-code %q, summary %q; want 2 after the install step alone\n%s", res.code, res.stepsRun, res.outputs["exit-code"], res.summary, res.log)
	}
	if _, err := os.Stat(res.installed); !os.IsNotExist(err) {
		t.Errorf("%s is there (%v): want nothing installed", res.installed, err)
	}
	if got := len(rel.Requested()) > 0; got != download {
		t.Errorf("downloaded %v; want downloads: %v", rel.Requested(), download)
	}
	if !strings.Contains(res.log, "nsman is not installed") {
		t.Errorf("the log does not say nsman is not installed:\n%s", res.log)
	}
}

// TestActionInstallChecksThePin: the input sha256 pins the binary, whatever
// checksums.txt (which comes from where the binary does) says: a binary of
// another hash, or a pin that is no SHA-256, fails the install with 2
// before nsman runs; the binary pinned, in either case, installs.
func TestActionInstallChecksThePin(t *testing.T) {
	bin := nsmanBinary(t)
	tests := []struct {
		name     string
		sha256   func(*release) string
		download bool // whether anything is downloaded before it fails
	}{
		{"a binary not the one pinned", func(*release) string { return strings.Repeat("0", 64) }, true},
		{"a pin that is no SHA-256", func(r *release) string { return r.SHA256[:63] + "g" }, false},
		{"a short pin", func(r *release) string { return r.SHA256[:63] }, false},
		{"a pin of two lines", func(r *release) string { return r.SHA256 + "\n" + r.SHA256 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := serveRelease(t, bin, nil)
			inputs := map[string]string{"version": testVersion, "sha256": tt.sha256(rel)}
			checkNotInstalled(t, rel, runAction(t, inputs, "NSMAN_DOWNLOAD_URL="+rel.URL), tt.download)
		})
	}
	for _, pin := range []func(*release) string{
		func(r *release) string { return r.SHA256 },
		func(r *release) string { return strings.ToUpper(r.SHA256) },
	} {
		rel := serveRelease(t, bin, nil)
		res := runAction(t, map[string]string{"version": testVersion, "sha256": pin(rel), "kubeconfig": filepath.Join(t.TempDir(), "missing")}, "NSMAN_DOWNLOAD_URL="+rel.URL)
		if res.stepsRun != 2 || !strings.Contains(res.log, "nsman "+testVersion+" ") {
			t.Errorf("sha256 %s: %d steps run; want nsman installed and run\n%s", pin(rel), res.stepsRun, res.log)
		}
	}
}

// TestGitLabTemplateSweeps runs the template's script in bash and in sh with
// its variables: the same install (NSMAN_SHA256 pinning the binary), sweep
// and exit status as the action's, the report in the project directory
// where the artifacts are taken from.
func TestGitLabTemplateSweeps(t *testing.T) {
	for _, shell := range gitlabShells {
		t.Run(shell.name, func(t *testing.T) { testGitLabTemplateSweeps(t, shell) })
	}
}

func testGitLabTemplateSweeps(t *testing.T, shell gitlabShell) {
	env, rel, ns := workflowSetup(t)
	due := ns + "/" + ns
	vars := []string{"NSMAN_VERSION=" + testVersion, "NSMAN_DOWNLOAD_URL=" + rel.URL, "KUBECONFIG=" + env.Kubeconfig, "NSMAN_NAMESPACE=" + ns}
	tests := []struct {
		name    string
		vars    []string
		code    int
		report  string // the artifact
		states  map[string]string
		deleted bool
	}{
		{"a dry run by default", nil, 0, "nsman-report.txt", map[string]string{due: "planned", ns + "/later": "waiting"}, false},
		{"a wrong checksum", []string{"NSMAN_DOWNLOAD_URL=" + serveRelease(t, nsmanBinary(t), func(s string) string {
			return strings.ReplaceAll(s, thisAsset, "nsman-other") + strings.Repeat("0", 64) + "  " + thisAsset + "\n"
		}).URL}, 2, "", nil, false},
		{"a binary not the one pinned", []string{"NSMAN_SHA256=" + strings.Repeat("0", 64)}, 2, "", nil, false},
		{"a failed action", []string{"NSMAN_DRY_RUN=false", "NSMAN_SELECTOR=ci=yes", "NSMAN_KUBECONFIG=" + refusingDeletes(t, env, ns)}, 1, "nsman-report.txt", map[string]string{due: "failed"}, false},
		{"no cluster", []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "missing")}, 2, "nsman-report.txt", map[string]string{}, false},
		{"a real run, the binary pinned", []string{"NSMAN_DRY_RUN=false", "NSMAN_SELECTOR=ci=yes", "NSMAN_OUTPUT=json", "NSMAN_SHA256=" + rel.SHA256}, 0, "nsman-report.json", map[string]string{due: "fired"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, log, project := runGitLab(t, shell, append(slices.Clone(vars), tt.vars...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, log)
			}
			reports, _ := filepath.Glob(filepath.Join(project, "nsman-report.*"))
			if tt.report == "" {
				if len(reports) != 0 || strings.Contains(log, "nsman sweep --") {
					t.Fatalf("reports %v, or a sweep ran, after a failed install\n%s", reports, log)
				}
				return
			}
			if len(reports) != 1 || filepath.Base(reports[0]) != tt.report {
				t.Fatalf("reports %v, want %s", reports, tt.report)
			}
			data, err := os.ReadFile(reports[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := states(t, data, strings.HasSuffix(tt.report, ".json")); !maps.Equal(got, tt.states) {
				t.Errorf("report says %v, want %v\n%s", got, tt.states, data)
			}
			if got := env.NamespaceGoneOrTerminating(t, ns); got != tt.deleted {
				t.Errorf("namespace deleted: %v, want %v", got, tt.deleted)
			}
		})
	}
}

// TestActionSummaryFenceHoldsTheReport: a report with lines of backticks
// (a tenant's words) stays in one code block of the summary, whose fence is
// longer than any of them. A script stands in for nsman.
func TestActionSummaryFenceHoldsTheReport(t *testing.T) {
	const reportText = "MANAGER\n```\n## not a heading\n````\n"
	fake := filepath.Join(t.TempDir(), "nsman")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo fake; exit 0; fi\nprintf '%s' '" + reportText + "'\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rel := serveRelease(t, fake, nil)
	res := runAction(t, map[string]string{"version": testVersion}, "NSMAN_DOWNLOAD_URL="+rel.URL)
	if res.code != 1 {
		t.Fatalf("exit %d, want the stand-in's 1\n%s", res.code, res.log)
	}
	if want := "\n`````text\n" + reportText + "`````\n"; !strings.HasSuffix(res.summary, want) {
		t.Errorf("summary:\n%s\nwant it to end with:\n%s", res.summary, want)
	}
}

// TestCITrustsOnlyWhatItIsTold: the CI step runs in a runner's pod, whose
// namespace ($POD_NAMESPACE, its ServiceAccount's) nsman would trust by
// default; the step trusts the namespaces its input names and no other,
// and says which on stderr. A manager in a namespace named as the runner's,
// aimed at another team's namespace, is forbidden and deletes nothing
// unless that input names its namespace.
func TestCITrustsOnlyWhatItIsTold(t *testing.T) {
	env, err := nsmantest.Setup(t.Context(), shared, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	rel := serveRelease(t, nsmanBinary(t), nil)
	runner, victim := shared.Namespace(t), shared.Namespace(t)
	env.Apply(t, []byte(`apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: takeover
  namespace: `+runner+`
spec:
  namespace: `+victim+`
  policies:
    - name: expired
      condition: {type: EXPIRES, params: {at: "2020-01-01T00:00:00Z"}}
      action: {type: DELETE}
`))
	manager := runner + "/takeover"
	tests := []struct {
		name    string
		trusted string // the input, NSMAN_TRUSTED_NAMESPACES
		dryRun  string
		state   string
		says    string
	}{
		{"nothing trusted: forbidden", "", "false", "forbidden", "nsman trusts no namespace: managers may target only their own\n"},
		{"the namespace named trusted", " " + runner + " ", "true", "planned", "nsman trusts: " + runner + "\n"},
	}
	// run runs the step, with $POD_NAMESPACE the runner's, and returns its
	// exit status, log and report.
	runs := map[string]func(t *testing.T, trusted, dryRun string) (int, string, []byte){
		"action": func(t *testing.T, trusted, dryRun string) (int, string, []byte) {
			inputs := map[string]string{"version": testVersion, "namespace": runner, "dry-run": dryRun, "trusted-namespaces": trusted}
			res := runAction(t, inputs, "NSMAN_DOWNLOAD_URL="+rel.URL, "KUBECONFIG="+env.Kubeconfig, "POD_NAMESPACE="+runner)
			data, _ := os.ReadFile(res.outputs["report"])
			return res.code, res.log, data
		},
	}
	for _, shell := range gitlabShells {
		runs["gitlab "+shell.name] = func(t *testing.T, trusted, dryRun string) (int, string, []byte) {
			code, log, project := runGitLab(t, shell, "NSMAN_VERSION="+testVersion, "NSMAN_DOWNLOAD_URL="+rel.URL, "KUBECONFIG="+env.Kubeconfig,
				"POD_NAMESPACE="+runner, "NSMAN_NAMESPACE="+runner, "NSMAN_DRY_RUN="+dryRun, "NSMAN_TRUSTED_NAMESPACES="+trusted)
			data, _ := os.ReadFile(filepath.Join(project, "nsman-report.txt"))
			return code, log, data
		}
	}
	for _, how := range slices.Sorted(maps.Keys(runs)) {
		for _, tt := range tests {
			t.Run(how+"/"+tt.name, func(t *testing.T) {
				code, log, data := runs[how](t, tt.trusted, tt.dryRun)
				if code != 0 {
					t.Fatalf("exit %d, want 0\n%s", code, log)
				}
				if got := states(t, data, false); !maps.Equal(got, map[string]string{manager: tt.state}) {
					t.Errorf("report says %v, want %s %s\n%s", got, manager, tt.state, data)
				}
				if !strings.Contains(log, tt.says) {
					t.Errorf("the log does not say %q:\n%s", tt.says, log)
				}
				if env.NamespaceGoneOrTerminating(t, victim) {
					t.Fatalf("namespace %s, which a manager in %s aimed at, was deleted", victim, runner)
				}
			})
		}
	}
}

// standIn is a script that stands in for nsman as a release binary: it
// writes its arguments, one a line, to $NSMAN_STAND_IN_ARGS and prints
// report as its report.
func standIn(t *testing.T, report string) string {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "nsman")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo fake; exit 0; fi\nprintf '%s\\n' \"$@\" >\"$NSMAN_STAND_IN_ARGS\"\nprintf '%s\\n' '" + report + "'\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fake
}

// TestCICommandLineShowsNoSecret: the command line the CI step prints
// shows the values of flags that take a URL as nsman shows such a URL (its
// scheme and host), those of flags that take a file as <file>, and any
// other argument holding a URL as a URL; nsman gets them whole. The
// install shows a download URL that is not GitHub's by its scheme and host
// too. A stand-in for nsman records what it got.
func TestCICommandLineShowsNoSecret(t *testing.T) {
	rel := serveRelease(t, standIn(t, "REPORT"), nil)
	download := strings.Replace(rel.URL, "http://", "http://mirror:s3cr3t-download@", 1)
	args := []string{
		"--notify-url", "https://hooks.example.com/services/T0/B0/s3cr3t-path",
		"--notify-url=https://hooks.example.com/s3cr3t-2?token=s3cr3t-query",
		"--pushgateway-url=http://user:s3cr3t-pw@pg.example.com:9091/",
		"--pushgateway-url", "http://pg.example.com:9091",
		"--notify-url-file", "/run/s3cr3t-dir/url",
		"--webhook-signing-key-file=/run/s3cr3t-dir/key",
		"--freeze-file", "/run/s3cr3t-dir/holidays",
		"https://h.example.com/#s3cr3t-fragment",
		"--at", "2020-01-01T00:00:00Z",
	}
	kubeconfig := "/run/s3cr3t-dir/kubeconfig"
	want := "nsman sweep --output text --dry-run --kubeconfig <file> --trusted-namespaces= " +
		"--notify-url https://hooks.example.com/… --notify-url=https://hooks.example.com/… " +
		"--pushgateway-url=http://pg.example.com:9091/… --pushgateway-url http://pg.example.com:9091 " +
		"--notify-url-file <file> --webhook-signing-key-file=<file> --freeze-file <file> " +
		"https://h.example.com/… --at 2020-01-01T00:00:00Z\n"
	wantArgs := slices.Concat([]string{"sweep", "--output", "text", "--dry-run", "--kubeconfig", kubeconfig, "--trusted-namespaces="}, args)
	runs := map[string]func(t *testing.T, got string) (int, string){
		"action": func(t *testing.T, got string) (int, string) {
			res := runAction(t, map[string]string{"version": testVersion, "kubeconfig": kubeconfig, "args": strings.Join(args, " ")},
				"NSMAN_DOWNLOAD_URL="+download, "NSMAN_STAND_IN_ARGS="+got)
			return res.code, res.log + res.summary
		},
	}
	for _, shell := range gitlabShells {
		runs["gitlab "+shell.name] = func(t *testing.T, got string) (int, string) {
			code, log, _ := runGitLab(t, shell, "NSMAN_VERSION="+testVersion, "NSMAN_DOWNLOAD_URL="+download, "NSMAN_STAND_IN_ARGS="+got,
				"NSMAN_KUBECONFIG="+kubeconfig, "NSMAN_ARGS="+strings.Join(args, "\n"))
			return code, log
		}
	}
	for _, how := range slices.Sorted(maps.Keys(runs)) {
		t.Run(how, func(t *testing.T) {
			got := filepath.Join(t.TempDir(), "args")
			code, log := runs[how](t, got)
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s", code, log)
			}
			if !strings.Contains(log, "\n"+want) {
				t.Errorf("the log does not show the command line\n%s\nit shows:\n%s", want, log)
			}
			if strings.Contains(log, "s3cr3t") {
				t.Errorf("the log shows a secret:\n%s", log)
			}
			data, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			if gotArgs := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"); !slices.Equal(gotArgs, wantArgs) {
				t.Errorf("nsman got\n%q\nwant\n%q", gotArgs, wantArgs)
			}
		})
	}
}

// TestInstallShowsNoMirrorSecret: a download URL of several lines, whose
// lines grep would read apart, is not shown at all when its download fails.
func TestInstallShowsNoMirrorSecret(t *testing.T) {
	rel := serveRelease(t, standIn(t, "REPORT"), nil)
	download := "s3cr3t-line\n" + strings.Replace(rel.URL, "127.0.0.1", "127.0.0.1.invalid", 1)
	res := runAction(t, map[string]string{"version": testVersion}, "NSMAN_DOWNLOAD_URL="+download)
	if res.code != 2 || res.stepsRun != 1 {
		t.Fatalf("exit %d after %d steps; want the install to fail with 2\n%s", res.code, res.stepsRun, res.log)
	}
	if strings.Contains(res.log, "s3cr3t") || !strings.Contains(res.log, "(a URL that is not shown)") {
		t.Errorf("the log shows the download URL, or does not say it is not shown:\n%s", res.log)
	}
}

// TestGitLabTemplateWithoutArtifact: NSMAN_ARTIFACT=false leaves no report
// in the project directory, where the artifact is taken from, nor in
// TMPDIR, where it was written; the log still shows it. Anything but true
// or false exits 2 before nsman runs.
func TestGitLabTemplateWithoutArtifact(t *testing.T) {
	rel := serveRelease(t, standIn(t, "REPORT-LINE"), nil)
	for _, shell := range gitlabShells {
		t.Run(shell.name, func(t *testing.T) {
			tmp := t.TempDir()
			vars := []string{"NSMAN_VERSION=" + testVersion, "NSMAN_DOWNLOAD_URL=" + rel.URL, "NSMAN_STAND_IN_ARGS=" + filepath.Join(t.TempDir(), "args"), "TMPDIR=" + tmp}
			code, log, project := runGitLab(t, shell, append(slices.Clone(vars), "NSMAN_ARTIFACT=false")...)
			if code != 0 || !strings.Contains(log, "\nREPORT-LINE\n") {
				t.Fatalf("exit %d, want 0 with the report in the log\n%s", code, log)
			}
			for _, dir := range []string{project, tmp} {
				if reports, _ := filepath.Glob(filepath.Join(dir, "nsman-report*")); len(reports) != 0 {
					t.Errorf("reports %v left behind", reports)
				}
			}
			// An earlier job's report, in a project directory not cleaned, is
			// not kept as this job's.
			if code, log, _ := runGitLabIn(t, shell, project, vars...); code != 0 {
				t.Fatalf("with the artifact: exit %d\n%s", code, log)
			}
			if reports, _ := filepath.Glob(filepath.Join(project, "nsman-report*")); len(reports) != 1 {
				t.Fatalf("with the artifact: reports %v, want one", reports)
			}
			if code, log, _ := runGitLabIn(t, shell, project, append(slices.Clone(vars), "NSMAN_ARTIFACT=false")...); code != 0 {
				t.Fatalf("exit %d\n%s", code, log)
			}
			if reports, _ := filepath.Glob(filepath.Join(project, "nsman-report*")); len(reports) != 0 {
				t.Errorf("NSMAN_ARTIFACT=false after a job with the artifact: reports %v left for the artifact step to keep", reports)
			}
			code, log, project = runGitLab(t, shell, append(slices.Clone(vars), "NSMAN_ARTIFACT=no")...)
			if reports, _ := filepath.Glob(filepath.Join(project, "nsman-report*")); code != 2 || strings.Contains(log, "REPORT-LINE") || len(reports) != 0 {
				t.Errorf("NSMAN_ARTIFACT=no: exit %d, reports %v; want 2 before nsman runs\n%s", code, reports, log)
			}
		})
	}
}

// TestCITrustedNamespacesChecked: the trusted namespaces are namespace
// names, comma-separated, white space around them dropped (never joining
// two names into one nobody wrote), and said as
// passed; anything else, or --trusted-namespaces in the extra flags, exits
// 2 before nsman runs, so that what the step says it trusts is what nsman
// trusts. A stand-in for nsman records what it got.
func TestCITrustedNamespacesChecked(t *testing.T) {
	rel := serveRelease(t, standIn(t, "REPORT"), nil)
	tests := []struct {
		name, trusted, args string
		passed              string // the flag nsman gets; "": nsman does not run
		says                string
	}{
		{"two, spaced", " platform, ci-2 ", "", "--trusted-namespaces=platform,ci-2", "nsman trusts: platform, ci-2\n"},
		{"none", "", "--at 2020-01-01T00:00:00Z", "--trusted-namespaces=", "nsman trusts no namespace: managers may target only their own\n"},
		{"commas across lines", "platform,\n\tci-2\n", "", "--trusted-namespaces=platform,ci-2", "nsman trusts: platform, ci-2\n"},
		{"two names apart", "platform ci", "", "", "NSMAN_TRUSTED_NAMESPACES is"},
		{"a name a line", "platform\nci", "", "", "NSMAN_TRUSTED_NAMESPACES is"},
		{"an empty name", "a,,b", "", "", "NSMAN_TRUSTED_NAMESPACES is"},
		{"not a namespace name", "Team_A", "", "", "NSMAN_TRUSTED_NAMESPACES is"},
		{"a flag", "--all", "", "", "NSMAN_TRUSTED_NAMESPACES is"},
		{"the flag in args", "", "--trusted-namespaces=kube-system", "", "--trusted-namespaces in NSMAN_ARGS"},
		{"the flag in args, its value apart", "a", "--trusted-namespaces kube-system", "", "--trusted-namespaces in NSMAN_ARGS"},
	}
	for _, tt := range tests {
		for _, shell := range gitlabShells {
			t.Run(tt.name+"/"+shell.name, func(t *testing.T) {
				got := filepath.Join(t.TempDir(), "args")
				code, log, _ := runGitLab(t, shell, "NSMAN_VERSION="+testVersion, "NSMAN_DOWNLOAD_URL="+rel.URL, "NSMAN_STAND_IN_ARGS="+got,
					"NSMAN_TRUSTED_NAMESPACES="+tt.trusted, "NSMAN_ARGS="+tt.args)
				data, err := os.ReadFile(got)
				if tt.passed == "" {
					if code != 2 || err == nil {
						t.Errorf("exit %d, nsman ran: %v; want 2 before nsman runs\n%s", code, err == nil, log)
					}
				} else if code != 0 || !slices.Contains(strings.Split(string(data), "\n"), tt.passed) {
					t.Errorf("exit %d, nsman got %q; want 0 and %s\n%s", code, data, tt.passed, log)
				}
				if !strings.Contains(log, tt.says) {
					t.Errorf("the log does not say %q:\n%s", tt.says, log)
				}
			})
		}
	}
}
