package cmd

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestExecuteExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "version", args: []string{"version"}, wantCode: ExitOK, wantStdout: "nsman dev "},
		{name: "no command prints help", args: nil, wantCode: ExitOK, wantStdout: "Usage:"},
		{name: "unknown command", args: []string{"swep"}, wantCode: ExitUsage, wantStderr: `unknown command "swep"`},
		{name: "mistyped command", args: []string{"swep"}, wantCode: ExitUsage, wantStderr: `unknown command "swep"; see 'nsman --help'; did you mean sweep?`},
		{name: "mistyped by two", args: []string{"hodl"}, wantCode: ExitUsage, wantStderr: "did you mean hold?"},
		{name: "version flag", args: []string{"--version"}, wantCode: ExitOK, wantStdout: "nsman dev "},
		{name: "unknown flag", args: []string{"--bogus"}, wantCode: ExitUsage, wantStderr: "unknown flag: --bogus"},
		{name: "extra argument", args: []string{"version", "extra"}, wantCode: ExitUsage, wantStderr: `unknown command "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Execute(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// nsman --version prints what nsman version prints, and a command far
// from every command's name is suggested none.
func TestVersionFlagAndNoSuggestion(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Execute(t.Context(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	_, want, _ := run("version")
	for _, flag := range []string{"--version", "-v"} {
		if code, got, stderr := run(flag); code != ExitOK || got != want {
			t.Errorf("%s: exit %d, %q (stderr %q), want %q", flag, code, got, stderr, want)
		}
	}
	if code, _, stderr := run("xyz"); code != ExitUsage || strings.Contains(stderr, "did you mean") {
		t.Errorf("xyz: exit %d, %q: want exit 2 and no suggestion", code, stderr)
	}
}

// TestUsageNamesTheInvokedCommand runs the binary's entry point under the
// names it is installed as: nsman, and kubectl-nsman, which kubectl runs as
// the plugin 'kubectl nsman' with the full path it found on PATH.
func TestUsageNamesTheInvokedCommand(t *testing.T) {
	tests := []struct {
		argv0 string
		// name is how usage lines, examples and hints spell the command.
		name string
	}{
		{argv0: "nsman", name: "nsman"},
		{argv0: "/usr/local/bin/nsman", name: "nsman"},
		{argv0: "kubectl-nsman", name: "kubectl nsman"},
		{argv0: "/home/dev/.local/bin/kubectl-nsman", name: "kubectl nsman"},
		// Only the exact plugin file name is a plugin.
		{argv0: "/opt/kubectl-nsman-old/nsman", name: "nsman"},
	}
	for _, tt := range tests {
		t.Run(tt.argv0, func(t *testing.T) {
			help := func(args ...string) string {
				t.Helper()
				var stdout, stderr bytes.Buffer
				if code := ExecuteAs(t.Context(), tt.argv0, args, &stdout, &stderr); code != ExitOK {
					t.Fatalf("%q: exit %d, stderr %q", args, code, stderr.String())
				}
				return stdout.String()
			}
			for _, want := range []struct {
				args []string
				text string
			}{
				{nil, "Usage:\n  " + tt.name + " [flags]\n  " + tt.name + " [command]\n"},
				{nil, `Use "` + tt.name + ` [command] --help" for more information`},
				{nil, "with " + tt.name + " sweep --dry-run, check an installation with " + tt.name},
				{[]string{"serve", "--help"}, "Serves the links " + tt.name + " sweep --links-url puts"},
				{[]string{"sweep", "--help"}, "Usage:\n  " + tt.name + " sweep [flags]\n"},
				{[]string{"restore", "--help"}, "Usage:\n  " + tt.name + " restore [-n] NAMESPACE [flags]\n"},
				{[]string{"version", "--help"}, "Usage:\n  " + tt.name + " version [flags]\n"},
				{[]string{"validate", "--help"}, "Usage:\n  " + tt.name + " validate -f FILE|DIR ... [flags]\n"},
				{[]string{"validate", "--help"}, "Examples:\n  " + tt.name + " validate -f examples/\n  " + tt.name + " validate -f manager.yaml"},
				{[]string{"validate", "--help"}, "kustomize build overlays/e2e | " + tt.name + " validate -f -\n"},
			} {
				if got := help(want.args...); !strings.Contains(got, want.text) {
					t.Errorf("%q printed:\n%s\nwant it to contain %q", want.args, got, want.text)
				}
			}
			if tt.name == "nsman" {
				if got := help("validate", "--help"); strings.Contains(got, "kubectl") {
					t.Errorf("validate --help as %s mentions kubectl:\n%s", tt.argv0, got)
				}
			}

			for _, want := range []struct {
				args   []string
				stderr string
			}{
				{[]string{"swep"}, tt.name + `: unknown command "swep"; see '` + tt.name + ` --help'`},
				{[]string{"version", "extra"}, `unknown command "extra" for "` + tt.name + ` version"`},
			} {
				var stdout, stderr bytes.Buffer
				if code := ExecuteAs(t.Context(), tt.argv0, want.args, &stdout, &stderr); code != ExitUsage {
					t.Errorf("%q: exit %d, want %d", want.args, code, ExitUsage)
				}
				if !strings.Contains(stderr.String(), want.stderr) {
					t.Errorf("%q: stderr %q, want it to contain %q", want.args, stderr.String(), want.stderr)
				}
			}
		})
	}
}

// TestPluginExamplesSayKubectlNsman checks every command's use line,
// examples and long help, word by word, so that an example or a sentence
// that invokes nsman where the rename does not look fails here.
func TestPluginExamplesSayKubectlNsman(t *testing.T) {
	root := newRootCommand(io.Discard, io.Discard)
	commands := map[string]bool{}
	for _, c := range root.Commands() {
		commands[c.Name()] = true
	}
	renameAsKubectlPlugin(root)
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			words := strings.Fields(line)
			for i, w := range words {
				if w == "nsman" && (i == 0 || words[i-1] != "kubectl") {
					t.Errorf("%s: example %q still invokes nsman", c.CommandPath(), line)
				}
			}
		}
		words := strings.Fields(c.Long)
		for i, w := range words {
			if w == "nsman" && i+1 < len(words) && commands[strings.TrimRight(words[i+1], ",.;:)")] && (i == 0 || words[i-1] != "kubectl") {
				t.Errorf("%s: long help still invokes nsman: %q", c.CommandPath(), strings.Join(words[max(0, i-3):min(len(words), i+4)], " "))
			}
		}
		if !strings.HasPrefix(c.UseLine(), "kubectl nsman") {
			t.Errorf("use line %q does not start with kubectl nsman", c.UseLine())
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// Under kubectl, prose says each invocation as 'kubectl nsman', and only
// those: a word that ends in nsman, nsman the product, and an invocation
// said so already stay; a paragraph that changed is wrapped again, one laid
// out by hand is not.
func TestAsPluginInProse(t *testing.T) {
	invoked := regexp.MustCompile(`\bnsman\s+(?:sweep|hold|validate)\b`)
	for _, tt := range []struct{ in, want string }{
		{"plan with nsman sweep --dry-run.", "plan with kubectl nsman sweep --dry-run."},
		{"as nsman\nsweep does", "as kubectl nsman sweep does"},
		{"nsman hold keeps it", "kubectl nsman hold keeps it"},
		{"helm template CHART | nsman validate -f -", "helm template CHART | kubectl nsman validate -f -"},
		{"already kubectl nsman sweep, and kubectl\nnsman hold", "already kubectl nsman sweep, and kubectl\nnsman hold"},
		{"installed as kubectl-nsman sweep, ./nsman sweep, bin/nsman hold", "installed as kubectl-nsman sweep, ./nsman sweep, bin/nsman hold"},
		{"nsman's sweep, nsman sweeps, nsman doctor", "nsman's sweep, nsman sweeps, nsman doctor"},
		{"the sweep's words run on and on until nsman sweep --dry-run comes at the end of the line\nand then more",
			"the sweep's words run on and on until kubectl nsman sweep --dry-run comes at the\nend of the line and then more"},
		{"a flag stays with the word before: a line that ends in nsman validate -f -", "a flag stays with the word before: a line that ends in kubectl nsman validate -f -"},
		{"one\n\n  nsman sweep --dry-run\n  nsman hold ns --for 2d\n\ntwo", "one\n\n  kubectl nsman sweep --dry-run\n  kubectl nsman hold ns --for 2d\n\ntwo"},
		{"a paragraph\nleft   as it is\n\nnsman sweep", "a paragraph\nleft   as it is\n\nkubectl nsman sweep"},
	} {
		if got := asPluginInProse(tt.in, invoked); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The commands that write to a cluster exit 2, as sweep, doctor and
// explain do, when the cluster cannot be reached or refuses the
// credentials: it is no write that failed.
func TestWritersExitUsageWhenUnreachable(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`)
	}))
	t.Cleanup(refusing.Close)
	refused := kubeconfigOf(t, refusing.URL)
	for kubeconfig, want := range map[string]string{unreachableKubeconfig(t): "the cluster cannot be reached", refused: "the cluster refused these credentials"} {
		for _, args := range [][]string{
			{"restore", "-n", "team-a"},
			{"hold", "team-a", "--for", "1h"},
			{"wake", "team-a", "--for", "1h"},
			{"touch", "team-a"},
		} {
			var stdout, stderr bytes.Buffer
			args = append(args, "--kubeconfig", kubeconfig)
			if code := Execute(t.Context(), args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), want) {
				t.Errorf("nsman %q: exit %d, stderr %q; want exit %d saying %s", args, code, stderr.String(), ExitUsage, want)
			}
		}
	}
}
