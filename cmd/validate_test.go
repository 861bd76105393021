package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nsman/nsman/test/fixtures/original"
)

// Manifests the tests combine into files.
const (
	manifestValidManager = `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: preview-42
  namespace: preview-42
spec:
  policies:
    - name: expire the preview
      condition:
        type: TTL
        params:
          ttlSeconds: 45
      action:
        type: DELETE
`
	manifestInvalidManager = `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: broken
  namespace: ci
spec:
  namespace: e2e-run
  policies:
    - name: tell the pipeline
      condition:
        type: PODS_SUCCEED
        params:
          initialDelaySeconds: -5
      action:
        type: WEBHOOK
    - name: expire
      condition:
        type: TIME
      action:
        type: DELETE
`
	manifestValidRule = `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: e2e-leftovers
  namespace: namespace-manager
spec:
  namespaceSelector:
    matchLabels:
      ci: e2e
    matchExpressions:
      - key: keep
        operator: DoesNotExist
  namePatterns: ["e2e-*", "pr-[0-9]*"]
  policies:
    - name: gone after a day
      condition:
        type: TTL
        params:
          ttlSeconds: 86400
      action:
        type: DELETE
`
	manifestInvalidRule = `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: e2e-leftovers
  namespace: namespace-manager
spec:
  namespace: e2e-1
  namespaceSelector:
    matchExpressions:
      - key: ci
        operator: In
  namePatterns: ["e2e-[", "pr-*"]
  policies:
    - name: gone after a day
      condition:
        type: TTL
      action:
        type: DELETE
`
	manifestNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: preview-42
`
	manifestJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: smoke
  namespace: preview-42
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: smoke
          image: example.invalid/smoke
`
)

// manifestInvalidManagerLines are what validate prints for manifestInvalidManager in FILE.
func manifestInvalidManagerLines(file string) string {
	return strings.NewReplacer("FILE", file).Replace(`FILE: ci/broken: spec.policies[0].condition.params.initialDelaySeconds: Invalid value: -5: must be between 0 and 2147483647
FILE: ci/broken: spec.policies[0].action.params.url: Required value: WEBHOOK needs an absolute http or https url
FILE: ci/broken: spec.policies[1].condition.type: Unsupported value: "TIME": supported values: "TTL", "PODS_SUCCEED", "PODS_FAILED", "EXPIRES", "IDLE", "OWNER_GONE"
`)
}

func yamlDocs(manifests ...string) string { return strings.Join(manifests, "---\n") }

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		// files maps paths below the working directory to their content.
		files      map[string]string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		// wantStderr is the summary line, or with a usage error a part of
		// the message.
		wantStderr string
	}{
		{
			name:       "valid manager",
			files:      map[string]string{"ok.yaml": yamlDocs(manifestNamespace, manifestValidManager)},
			args:       []string{"-f", "ok.yaml"},
			wantCode:   ExitOK,
			wantStderr: "1 NamespaceManager in 1 file: 1 valid, 0 invalid; 1 other object skipped\n",
		},
		{
			name:       "valid rule",
			files:      map[string]string{"rule.yaml": manifestValidRule},
			args:       []string{"-f", "rule.yaml"},
			wantCode:   ExitOK,
			wantStderr: "1 NamespaceManager in 1 file: 1 valid, 0 invalid; 0 other objects skipped\n",
		},
		{
			name:     "invalid rule",
			files:    map[string]string{"rule.yaml": manifestInvalidRule},
			args:     []string{"-f", "rule.yaml"},
			wantCode: ExitFailed,
			wantStdout: `rule.yaml: namespace-manager/e2e-leftovers: spec.namespaceSelector.matchExpressions[0].values: Required value: must be specified when ` + "`operator`" + ` is 'In' or 'NotIn'
rule.yaml: namespace-manager/e2e-leftovers: spec.namePatterns[0]: Invalid value: "e2e-[": must be a shell-style pattern (path.Match syntax: *, ?, [a-z], \ escapes); a [ is not closed or a \ ends it
rule.yaml: namespace-manager/e2e-leftovers: spec.namespace: Forbidden: a rule (namespaceSelector or namePatterns) acts on the namespaces it matches; it cannot also name one
`,
			wantStderr: "1 NamespaceManager in 1 file: 0 valid, 1 invalid; 0 other objects skipped\nnsman: 1 NamespaceManager invalid\n",
		},
		{
			name:       "invalid manager",
			files:      map[string]string{"bad.yaml": manifestInvalidManager},
			args:       []string{"--filename", "bad.yaml"},
			wantCode:   ExitFailed,
			wantStdout: manifestInvalidManagerLines("bad.yaml"),
			wantStderr: "1 NamespaceManager in 1 file: 0 valid, 1 invalid; 0 other objects skipped\nnsman: 1 NamespaceManager invalid\n",
		},
		{
			name: "other kinds and empty documents among managers",
			files: map[string]string{"mixed.yaml": "---\n" + yamlDocs(
				manifestNamespace, "# only a comment\n", manifestValidManager, "", manifestJob, manifestInvalidManager,
			) + "---\n"},
			args:       []string{"-f", "mixed.yaml"},
			wantCode:   ExitFailed,
			wantStdout: manifestInvalidManagerLines("mixed.yaml"),
			wantStderr: "2 NamespaceManagers in 1 file: 1 valid, 1 invalid; 2 other objects skipped\n",
		},
		{
			// A sweep skips a deactivated manager without validating it:
			// its problems are warnings, on stderr, and exit 0.
			name:     "deactivated invalid manager",
			files:    map[string]string{"off.yaml": strings.Replace(manifestInvalidManager, "spec:\n", "spec:\n  deactivated: true\n", 1)},
			args:     []string{"-f", "off.yaml"},
			wantCode: ExitOK,
			wantStderr: strings.ReplaceAll(manifestInvalidManagerLines("off.yaml"), "off.yaml: ci/broken: ", "off.yaml: ci/broken: warning, deactivated (a sweep skips it until it is re-armed): ") +
				"1 NamespaceManager in 1 file: 0 valid, 0 invalid, 1 deactivated (a sweep skips it; its problems are warnings); 0 other objects skipped\n",
		},
		{
			// A chart's templates are no manifests until rendered: skipped,
			// and said so; its other files are read.
			name: "a directory holding a Helm chart",
			files: map[string]string{
				"deploy/base/ok.yaml":                   manifestValidManager,
				"deploy/helm/nsman/Chart.yaml":          "apiVersion: v2\nname: nsman\nversion: 0.1.0\n",
				"deploy/helm/nsman/templates/cron.yaml": "kind: CronJob\nmetadata:\n  name: {{ include \"nsman.fullname\" . }}\n",
			},
			args:     []string{"-R", "-f", "deploy"},
			wantCode: ExitOK,
			wantStderr: "deploy/helm/nsman/templates: skipped: the templates of a Helm chart; validate what they render: helm template deploy/helm/nsman | nsman validate -f -\n" +
				"1 NamespaceManager in 2 files: 1 valid, 0 invalid; 1 other object skipped\n",
		},
		{
			name:       "no manager at all",
			files:      map[string]string{"workload.yml": yamlDocs(manifestNamespace, manifestJob)},
			args:       []string{"-f", "workload.yml"},
			wantCode:   ExitOK,
			wantStderr: "0 NamespaceManagers in 1 file: 0 valid, 0 invalid; 2 other objects skipped\n",
		},
		{
			name: "json stream",
			files: map[string]string{"ok.json": `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "preview-7"}}
{"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
 "metadata": {"name": "preview-7", "namespace": "preview-7"},
 "spec": {"policies": [{"name": "expire", "condition": {"type": "TTL", "params": {"ttlSeconds": 60}}, "action": {"type": "DELETE"}}]}}
`},
			args:       []string{"-f", "ok.json"},
			wantCode:   ExitOK,
			wantStderr: "1 NamespaceManager in 1 file: 1 valid, 0 invalid; 1 other object skipped\n",
		},
		{
			name: "directory, not recursive",
			files: map[string]string{
				"dir/a.yaml":       manifestValidManager,
				"dir/b.yml":        manifestInvalidManager,
				"dir/c.json":       `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c"}}`,
				"dir/notes.txt":    "not: [a manifest",
				"dir/nested/d.yml": manifestInvalidManager,
			},
			args:       []string{"-f", "dir"},
			wantCode:   ExitFailed,
			wantStdout: manifestInvalidManagerLines(filepath.Join("dir", "b.yml")),
			wantStderr: "2 NamespaceManagers in 3 files: 1 valid, 1 invalid; 1 other object skipped\n",
		},
		{
			name: "directory, recursive",
			files: map[string]string{
				"dir/a.yaml":       manifestValidManager,
				"dir/nested/d.yml": manifestInvalidManager,
			},
			args:       []string{"-R", "-f", "dir"},
			wantCode:   ExitFailed,
			wantStdout: manifestInvalidManagerLines(filepath.Join("dir", "nested", "d.yml")),
			wantStderr: "2 NamespaceManagers in 2 files: 1 valid, 1 invalid; 0 other objects skipped\n",
		},
		{
			name: "repeated and comma-separated -f, any extension",
			files: map[string]string{
				"one.yaml":     manifestValidManager,
				"two.manifest": manifestValidManager,
				"three.yaml":   yamlDocs(manifestNamespace, manifestJob),
			},
			args:       []string{"-f", "one.yaml,two.manifest", "-f", "three.yaml"},
			wantCode:   ExitOK,
			wantStderr: "2 NamespaceManagers in 3 files: 2 valid, 0 invalid; 2 other objects skipped\n",
		},
		{
			name:       "stdin",
			args:       []string{"-f", "-"},
			stdin:      manifestInvalidManager,
			wantCode:   ExitFailed,
			wantStdout: manifestInvalidManagerLines("-"),
			wantStderr: "1 NamespaceManager in 1 file: 0 valid, 1 invalid; 0 other objects skipped\n",
		},
		{
			name: "managers inside a List",
			files: map[string]string{"list.yaml": `apiVersion: v1
kind: List
items:
  - apiVersion: k8s.consol.de/v1beta1
    kind: NamespaceManager
    metadata: {name: preview-1, namespace: preview-1}
    spec:
      policies: [{name: expire, condition: {type: TTL}, action: {type: DELETE}}]
  - apiVersion: k8s.consol.de/v1beta1
    kind: NamespaceManager
    metadata: {namespace: preview-2}
    spec: {}
`},
			args:     []string{"-f", "list.yaml"},
			wantCode: ExitFailed,
			wantStdout: `list.yaml: document 1, item 2: metadata.name: Required value
list.yaml: document 1, item 2: spec.policies: Required value: at least one policy
`,
			wantStderr: "2 NamespaceManagers in 1 file: 1 valid, 1 invalid; 0 other objects skipped\n",
		},
		{
			name: "another apiVersion, a fraction, a manager without namespace",
			files: map[string]string{"odd.yaml": `apiVersion: k8s.consol.de/v1
kind: NamespaceManager
metadata:
  name: preview-9
spec:
  policies:
    - name: expire
      condition: {type: TTL, params: {ttlSeconds: 40.5}}
      action: {type: DELETE}
`},
			args:     []string{"-f", "odd.yaml"},
			wantCode: ExitFailed,
			wantStdout: `odd.yaml: preview-9: apiVersion: Unsupported value: "k8s.consol.de/v1": supported values: "k8s.consol.de/v1beta1"
odd.yaml: preview-9: spec.policies[0].condition.params.ttlSeconds: Invalid value: 40.5: must be a whole number
`,
			wantStderr: "1 NamespaceManager in 1 file: 0 valid, 1 invalid; 0 other objects skipped\n",
		},
		{
			name:       "no -f",
			wantCode:   ExitUsage,
			wantStderr: "no manifests given",
		},
		{
			name:       "positional argument",
			files:      map[string]string{"ok.yaml": manifestValidManager},
			args:       []string{"ok.yaml"},
			wantCode:   ExitUsage,
			wantStderr: `unknown command "ok.yaml"`,
		},
		{
			name:       "missing file",
			args:       []string{"-f", "nowhere.yaml"},
			wantCode:   ExitUsage,
			wantStderr: "nowhere.yaml: no such file or directory",
		},
		{
			name:       "directory without manifests",
			files:      map[string]string{"dir/notes.txt": "hello"},
			args:       []string{"-f", "dir"},
			wantCode:   ExitUsage,
			wantStderr: "dir: no .json, .yaml, .yml files",
		},
		{
			name: "malformed YAML",
			files: map[string]string{
				"bad.yaml":   yamlDocs(manifestValidManager, "kind: NamespaceManager\nspec: [unclosed\n"),
				"other.yaml": manifestInvalidManager,
			},
			args:     []string{"-f", "bad.yaml", "-f", "other.yaml"},
			wantCode: ExitUsage,
			// The other files are still checked.
			wantStdout: manifestInvalidManagerLines("other.yaml"),
			wantStderr: "bad.yaml: document 2: ",
		},
		{
			name:       "a document that is not an object",
			files:      map[string]string{"scalar.yaml": yamlDocs(manifestValidManager, "just text\n")},
			args:       []string{"-f", "scalar.yaml"},
			wantCode:   ExitUsage,
			wantStderr: "scalar.yaml: document 2: not an object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestFiles(t, dir, tt.files)
			t.Chdir(dir)
			code, stdout, stderr := runValidate(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			if stdout != tt.wantStdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, tt.wantStdout)
			}
			if tt.wantCode == ExitUsage {
				if !strings.Contains(stderr, tt.wantStderr) {
					t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantStderr)
				}
			} else if !strings.HasPrefix(stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to start with %q", stderr, tt.wantStderr)
			}
		})
	}
}

// TestValidateUnreadableFile: a file that a directory lists but that cannot
// be opened, here a link to nothing (which no user, root included, can
// read), is a usage error naming it, and the other files are still
// validated.
func TestValidateUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	writeTestFiles(t, dir, map[string]string{"good.yaml": manifestValidManager})
	if err := os.Symlink(filepath.Join(dir, "gone.yaml"), filepath.Join(dir, "secret.yaml")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runValidate(t, "", "-f", dir)
	const summary = "1 NamespaceManager in 2 files: 1 valid, 0 invalid; 0 other objects skipped\n"
	wantErr := filepath.Join(dir, "secret.yaml") + ": no such file or directory"
	if code != ExitUsage || !strings.HasPrefix(stderr, summary) || !strings.Contains(stderr, wantErr) {
		t.Errorf("exit code = %d, stderr = %q; want %d, %q and %q", code, stderr, ExitUsage, summary, wantErr)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
}

// TestValidateUpstreamExamples checks that the original operator's four
// example manifests, as the project's fixture in test/fixtures/original
// describes them, are valid as they are.
func TestValidateUpstreamExamples(t *testing.T) {
	dir := original.Path(original.ExamplesDir)
	code, stdout, stderr := runValidate(t, "", "-f", dir)
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitOK, stdout, stderr)
	}
	if want := "4 NamespaceManagers in 4 files: 4 valid, 0 invalid; "; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr = %q, want it to start with %q", stderr, want)
	}
}

// runValidate runs 'nsman validate args...' as Execute would and returns the
// exit code and output.
func runValidate(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	// Until the root command registers validate itself.
	if c, _, err := root.Find([]string{"validate"}); err != nil || c == root {
		root.AddCommand(newValidateCommand())
	}
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"validate"}, args...))
	err := root.ExecuteContext(t.Context())
	switch {
	case err == nil:
		code = ExitOK
	case errors.As(err, new(usageError)):
		code = ExitUsage
	default:
		code = ExitFailed
	}
	if err != nil {
		fmt.Fprintf(&errOut, "nsman: %v\n", err)
	}
	return code, out.String(), errOut.String()
}

func writeTestFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
