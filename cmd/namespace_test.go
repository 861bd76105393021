package cmd

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// hold, wake, touch and restore take the namespace as an argument or with
// -n, as kubectl users type it; the forms each had before still work.
func TestNamespaceArgumentOrFlag(t *testing.T) {
	tests := []struct {
		args     string
		wantCode int
		want     string
	}{
		{"hold team-a --for 1h --dry-run", ExitOK, "namespace team-a would be held until"},
		{"hold -n team-a --for 1h --dry-run", ExitOK, "namespace team-a would be held until"},
		{"hold -n team-a team-a --for 1h --dry-run", ExitOK, "namespace team-a would be held until"},
		{"hold -n team-a --manager m --for 1h --dry-run", ExitOK, "manager team-a/m would be held until"},
		{"hold -n team-a team-b --for 1h --dry-run", ExitUsage, "give one namespace: NAMESPACE, or -n NAMESPACE"},
		{"hold --for 1h --dry-run", ExitUsage, "give one namespace"},
		{"wake team-a --for 1h --dry-run", ExitOK, "namespace team-a would be woken until"},
		{"wake --namespace team-a --for 1h --dry-run", ExitOK, "namespace team-a would be woken until"},
		{"wake --for 1h --dry-run", ExitUsage, "give one namespace"},
		{"touch team-a team-b --dry-run", ExitOK, "namespace team-b would be touched"},
		{"touch -n team-a --dry-run", ExitOK, "namespace team-a would be touched"},
		{"touch -n team-a team-b --dry-run", ExitOK, "namespace team-b would be touched"},
		{"touch --dry-run", ExitUsage, "give a namespace"},
		{"restore", ExitUsage, "give one namespace"},
		{"restore -n team-a team-b", ExitUsage, "give one namespace"},
		{"restore team-a team-b", ExitUsage, "accepts at most 1 arg(s)"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Execute(t.Context(), strings.Fields(tt.args), &stdout, &stderr)
		if out := stdout.String() + stderr.String(); code != tt.wantCode || !strings.Contains(out, tt.want) {
			t.Errorf("nsman %s: exit %d, %q; want exit %d and %q", tt.args, code, out, tt.wantCode, tt.want)
		}
	}
}

// nsman restore NAMESPACE reads the workloads of NAMESPACE, as -n
// NAMESPACE does.
func TestRestoreTakesANamespaceArgument(t *testing.T) {
	for _, args := range [][]string{{"restore", "team-a"}, {"restore", "-n", "team-a"}} {
		var mu sync.Mutex
		var paths []string
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/version" {
				_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.0"}`))
				return
			}
			http.NotFound(w, r)
		}))
		var stdout, stderr bytes.Buffer
		Execute(t.Context(), append(args, "--kubeconfig", kubeconfigOf(t, server.URL)), &stdout, &stderr)
		server.Close()
		mu.Lock()
		read := strings.Contains(strings.Join(paths, " "), "/namespaces/team-a/")
		mu.Unlock()
		if !read {
			t.Errorf("nsman %q read %q (stderr %q); want the workloads of namespace team-a", args, paths, stderr.String())
		}
	}
}
