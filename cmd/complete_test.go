package cmd

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// twoContexts writes a kubeconfig of two contexts, alpha and beta, each
// its own cluster and user, both at server, and returns its path.
func twoContexts(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- {name: alpha-cluster, cluster: {server: %[1]q}}
- {name: beta-cluster, cluster: {server: %[1]q}}
users:
- {name: alpha-user, user: {token: alpha}}
- {name: beta-user, user: {token: beta}}
contexts:
- {name: alpha, context: {cluster: alpha-cluster, user: alpha-user}}
- {name: beta, context: {cluster: beta-cluster, user: beta-user}}
current-context: alpha
`, server)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// completions runs nsman's hidden __complete with args, as a shell's
// completion script does, and returns the words it offers, its directive
// (cobra's number after ':') and what it wrote to stderr but cobra's
// closing line.
func completions(t *testing.T, args ...string) (words []string, directive, stderr string) {
	t.Helper()
	var stdout, errs bytes.Buffer
	if code := Execute(t.Context(), append([]string{"__complete"}, args...), &stdout, &errs); code != ExitOK {
		t.Fatalf("__complete %q: exit %d, stderr %s", args, code, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	stderr, _, _ = strings.Cut(errs.String(), "Completion ended with directive:")
	return lines[:len(lines)-1], lines[len(lines)-1], strings.TrimSpace(stderr)
}

// Every flag and argument completes as kubectl's do: the kubeconfig's
// names without a cluster, fixed choices, files only where a file is
// read. The kubeconfig's cluster cannot be reached (nothing listens on
// port 1): namespaces and managers complete nothing, quickly and without
// a word.
func TestCompletion(t *testing.T) {
	kc := twoContexts(t, "https://127.0.0.1:1")
	const noFiles, files, noSpace, manifests = ":4", ":0", ":6", ":8"
	tests := []struct {
		name          string
		args          []string
		want          string
		wantDirective string
	}{
		{"contexts", []string{"hold", "--kubeconfig", kc, "--context", ""}, "alpha beta", noFiles},
		{"contexts by prefix", []string{"sweep", "--kubeconfig", kc, "--context", "b"}, "beta", noFiles},
		{"clusters", []string{"explain", "--kubeconfig", kc, "--cluster", ""}, "alpha-cluster beta-cluster", noFiles},
		{"users", []string{"touch", "--kubeconfig", kc, "--user", "a"}, "alpha-user", noFiles},
		{"namespaces, no cluster", []string{"hold", "--kubeconfig", kc, ""}, "", noFiles},
		{"-n, no cluster", []string{"wake", "--kubeconfig", kc, "-n", ""}, "", noFiles},
		{"managers, no cluster", []string{"hold", "--kubeconfig", kc, "team-a", "--manager", ""}, "", noFiles},
		{"sweep -o", []string{"sweep", "-o", ""}, "json name text wide yaml", noFiles},
		{"doctor -o", []string{"doctor", "-o", ""}, "json name text wide yaml", noFiles},
		{"due -o", []string{"due", "-o", ""}, "json name text wide yaml", noFiles},
		{"explain -o", []string{"explain", "-o", ""}, "json name text wide yaml", noFiles},
		{"validate -o", []string{"validate", "-o", ""}, "json name text yaml", noFiles},
		{"due -n, no cluster", []string{"due", "--kubeconfig", kc, "-n", ""}, "", noFiles},
		{"due's arguments", []string{"due", ""}, "", noFiles},
		{"the commands", []string{"du"}, "due\tList what will act within a time, sorted by when, and what delays it", noFiles},
		{"explain -o", []string{"explain", "--output", "y"}, "yaml", noFiles},
		{"--state, a list", []string{"sweep", "--state", "fired,f"}, "fired,failed fired,forbidden", noSpace},
		{"--notify-format", []string{"sweep", "--notify-format", ""}, "googlechat json slack teams", noFiles},
		{"--log-format", []string{"sweep", "--log-format", ""}, "json text", noFiles},
		{"--log-level", []string{"sweep", "--log-level", ""}, "debug error info warn", noFiles},
		{"--config-from", []string{"doctor", "--config-from", ""}, "auto none", noFiles},
		{"--kubeconfig", []string{"sweep", "--kubeconfig", ""}, "", files},
		{"a *-file flag", []string{"sweep", "--freeze-file", ""}, "", files},
		{"--client-key", []string{"hold", "--client-key", ""}, "", files},
		{"validate -f", []string{"validate", "-f", ""}, "yaml yml json", manifests},
		{"a flag of no fixed choices", []string{"sweep", "--qps", ""}, "", noFiles},
		{"sweep's arguments", []string{"sweep", ""}, "", noFiles},
		{"one namespace given", []string{"hold", "--kubeconfig", kc, "team-a", ""}, "", noFiles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			words, directive, stderr := completions(t, tt.args...)
			if got := strings.Join(words, " "); got != tt.want || directive != tt.wantDirective {
				t.Errorf("completes %q (directive %s), want %q (%s)", got, directive, tt.want, tt.wantDirective)
			}
			if stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %s: a completion waits 2s at most", took)
			}
		})
	}
}

// Namespaces and managers come from the cluster in one request of
// metadata, of 500 at most; a cluster that does not answer within 2s
// completes nothing.
func TestCompletionFromTheCluster(t *testing.T) {
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		if !strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
			t.Errorf("%s asked for %q, want metadata alone", r.URL.Path, r.Header.Get("Accept"))
		}
		items := `{"metadata":{"name":"team-a"}},{"metadata":{"name":"team-b"}},{"metadata":{"name":"tools"}}`
		if strings.HasSuffix(r.URL.Path, "/namespacemanagers") {
			items = `{"metadata":{"name":"preview","namespace":"team-a"}}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[%s]}`, items)
	}))
	defer api.Close()
	kc := twoContexts(t, api.URL)
	for _, tt := range []struct {
		args      []string
		want, ask string
	}{
		{[]string{"hold", "--kubeconfig", kc, "team"}, "team-a team-b", "/api/v1/namespaces?limit=500&timeout=2s"},
		{[]string{"touch", "--kubeconfig", kc, "team-a", ""}, "team-b tools", "/api/v1/namespaces?limit=500&timeout=2s"},
		{[]string{"sweep", "--kubeconfig", kc, "--trusted-namespaces", "tools,t"}, "tools,team-a tools,team-b", "/api/v1/namespaces?limit=500&timeout=2s"},
		{[]string{"wake", "--kubeconfig", kc, "-n", "team-a", "--manager", ""}, "preview", "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers?limit=500&timeout=2s"},
	} {
		asked = nil
		words, _, _ := completions(t, tt.args...)
		if got := strings.Join(words, " "); got != tt.want || fmt.Sprint(asked) != "["+tt.ask+"]" {
			t.Errorf("%q completes %q asking %q, want %q asking %q", tt.args, got, asked, tt.want, tt.ask)
		}
	}

	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hung.Close()
	start := time.Now()
	words, _, stderr := completions(t, "hold", "--kubeconfig", twoContexts(t, hung.URL), "")
	if took := time.Since(start); len(words) != 0 || stderr != "" || took > 4*time.Second {
		t.Errorf("a cluster that does not answer: %q, stderr %q after %s; want nothing, silently, after 2s", words, stderr, took)
	}
}
