package cmd

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nsman/nsman/explain"
)

// The namespace nsman runs in is trusted and protected: it comes from
// $POD_NAMESPACE, or from the ServiceAccount's file only when nsman sweeps
// through the in-cluster config (--server leaves it, --as and --token
// alone do not). A CI runner's pod has that file too, and
// nsman run there with a kubeconfig sweeps another cluster from outside.
func TestOwnNamespace(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyHome, userHome := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(userHome, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(userHome, ".kube", "config"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A pod's ServiceAccount files, naming the runner's namespace.
	pod := t.TempDir()
	for name, content := range map[string]string{"namespace": "ci-runner\n", "token": "x"} {
		if err := os.WriteFile(filepath.Join(pod, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	noToken := t.TempDir()
	if err := os.WriteFile(filepath.Join(noToken, "namespace"), []byte("ci-runner"), 0o600); err != nil {
		t.Fatal(err)
	}

	inPod := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBECONFIG": "", "POD_NAMESPACE": "", "HOME": emptyHome}
	with := func(env map[string]string, more ...string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = v
		}
		for i := 0; i < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		opts kubeOptions
		dir  string
		want string
	}{
		{"in-cluster config", inPod, kubeOptions{}, pod, "ci-runner"},
		{"POD_NAMESPACE wins", with(inPod, "POD_NAMESPACE", "nsman"), kubeOptions{}, pod, "nsman"},
		{"POD_NAMESPACE with a kubeconfig", with(inPod, "POD_NAMESPACE", "nsman"), kubeOptions{kubeconfig: kubeconfig}, pod, "nsman"},
		{"--kubeconfig in a pod", inPod, kubeOptions{kubeconfig: kubeconfig}, pod, ""},
		{"--context in a pod", inPod, kubeOptions{context: "c"}, pod, ""},
		{"--server in a pod", inPod, kubeOptions{overrides: clientcmd.ConfigOverrides{ClusterInfo: clientcmdapi.Cluster{Server: "https://other.example"}}}, pod, ""},
		{"--as in a pod", inPod, kubeOptions{overrides: clientcmd.ConfigOverrides{AuthInfo: clientcmdapi.AuthInfo{Impersonate: "system:serviceaccount:team-a:ci"}}}, pod, "ci-runner"},
		{"--token in a pod", inPod, kubeOptions{overrides: clientcmd.ConfigOverrides{AuthInfo: clientcmdapi.AuthInfo{Token: "t"}}}, pod, "ci-runner"},
		{"$KUBECONFIG in a pod", with(inPod, "KUBECONFIG", kubeconfig), kubeOptions{}, pod, ""},
		{"~/.kube/config in a pod", with(inPod, "HOME", userHome), kubeOptions{}, pod, ""},
		{"no service host", with(inPod, "KUBERNETES_SERVICE_HOST", ""), kubeOptions{}, pod, ""},
		{"no token", inPod, kubeOptions{}, noToken, ""},
		{"no pod", inPod, kubeOptions{}, filepath.Join(pod, "missing"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// clientcmd read $HOME once, when it was loaded.
			home := clientcmd.RecommendedHomeFile
			t.Cleanup(func() { clientcmd.RecommendedHomeFile = home })
			clientcmd.RecommendedHomeFile = filepath.Join(tc.env["HOME"], ".kube", "config")
			tc.opts.serviceAccountDir = tc.dir
			if got := tc.opts.ownNamespace(); got != tc.want {
				t.Errorf("ownNamespace() = %q, want %q", got, tc.want)
			}
		})
	}
}

// The commands nsman explain prints name the cluster it read as it was
// given, the kubeconfig made absolute, so that they can be pasted
// elsewhere; none when neither flag was given.
func TestKubeOptionsCluster(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts kubeOptions
		want explain.Cluster
	}{
		{kubeOptions{}, explain.Cluster{}},
		{kubeOptions{context: "prod"}, explain.Cluster{Context: "prod"}},
		{kubeOptions{kubeconfig: "kube/config", context: "prod"}, explain.Cluster{Kubeconfig: filepath.Join(wd, "kube", "config"), Context: "prod"}},
		{kubeOptions{kubeconfig: "/etc/k"}, explain.Cluster{Kubeconfig: "/etc/k"}},
	} {
		if got := tc.opts.cluster(); got != tc.want {
			t.Errorf("%+v: cluster() = %+v, want %+v", tc.opts, got, tc.want)
		}
	}
}

// A kubeconfig that does not exist or cannot be read is named as it was
// given, --kubeconfig or $KUBECONFIG, and the command exits 2 as for any
// cluster it cannot reach.
func TestMissingKubeconfigNamed(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent")
	tests := []struct {
		name, env string
		args      []string
		want      string
	}{
		{name: "flag missing", args: []string{"--kubeconfig", missing}, want: "--kubeconfig " + missing + " does not exist"},
		{name: "flag unreadable", args: []string{"--kubeconfig", dir}, want: "--kubeconfig " + dir + " cannot be read: "},
		{name: "variable missing", env: missing, want: "KUBECONFIG=" + missing + ": " + missing + " does not exist"},
		{name: "variable unreadable", env: missing + string(filepath.ListSeparator) + dir, want: "KUBECONFIG=" + missing + string(filepath.ListSeparator) + dir + ": " + missing + " does not exist; " + dir + " cannot be read: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			for _, command := range [][]string{{"restore", "-n", "ns"}, {"doctor"}, {"sweep", "--dry-run"}, {"hold", "ns", "--for", "1h"}} {
				var stdout, stderr bytes.Buffer
				code := Execute(t.Context(), append(command, tt.args...), &stdout, &stderr)
				if code != ExitUsage || !strings.Contains(stderr.String(), tt.want) {
					t.Errorf("%s: exit %d, %q; want exit %d naming %q", command[0], code, stderr.String(), ExitUsage, tt.want)
				}
			}
		})
	}
}

// kubectl's connection flags reach the client's configuration as kubectl
// sets them, each over what the kubeconfig says: the cluster and user
// picked by name, the server, the credentials, TLS, the impersonation and
// the timeout.
func TestConnectionFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", "")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "https://c.example:6443"}}
- {name: other, cluster: {server: "https://other.example:6443"}}
users:
- {name: u, user: {token: from-kubeconfig, as: kubeconfig-user, as-groups: [kubeconfig-group]}}
- {name: robot, user: {token: robot-token}}
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range []string{"ca.crt", "client.crt", "client.key"} {
		files[name] = filepath.Join(dir, name)
		if err := os.WriteFile(files[name], []byte("-"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		args  []string
		check func(*rest.Config) string
	}{
		{"the kubeconfig alone", nil, func(c *rest.Config) string {
			return diff(c.Host+" "+c.BearerToken+" "+c.Impersonate.UserName+" "+strings.Join(c.Impersonate.Groups, ","), "https://c.example:6443 from-kubeconfig kubeconfig-user kubeconfig-group")
		}},
		{"impersonation", []string{"--as", "system:serviceaccount:namespace-manager:nsman", "--as-group", "g1", "--as-group", "g2", "--as-uid", "42"}, func(c *rest.Config) string {
			return diff(fmt.Sprint(c.Impersonate), fmt.Sprint(rest.ImpersonationConfig{UserName: "system:serviceaccount:namespace-manager:nsman", UID: "42", Groups: []string{"g1", "g2"}}))
		}},
		{"--as keeps the kubeconfig's groups", []string{"--as", "alice"}, func(c *rest.Config) string {
			return diff(c.Impersonate.UserName+" "+strings.Join(c.Impersonate.Groups, ","), "alice kubeconfig-group")
		}},
		{"server and token", []string{"-s", "https://s.example", "--token", "flag-token"}, func(c *rest.Config) string {
			return diff(c.Host+" "+c.BearerToken, "https://s.example flag-token")
		}},
		{"cluster and user by name", []string{"--cluster", "other", "--user", "robot"}, func(c *rest.Config) string {
			return diff(c.Host+" "+c.BearerToken+" "+c.Impersonate.UserName, "https://other.example:6443 robot-token ")
		}},
		{"request timeout", []string{"--request-timeout", "45s"}, func(c *rest.Config) string {
			return diff(c.Timeout.String(), "45s")
		}},
		{"request timeout in seconds", []string{"--request-timeout", "7"}, func(c *rest.Config) string {
			return diff(c.Timeout.String(), "7s")
		}},
		{"no request timeout", nil, func(c *rest.Config) string { return diff(c.Timeout.String(), "0s") }},
		{"TLS files", []string{"--certificate-authority", files["ca.crt"], "--client-certificate", files["client.crt"], "--client-key", files["client.key"], "--tls-server-name", "api.internal"}, func(c *rest.Config) string {
			return diff(strings.Join([]string{c.CAFile, c.CertFile, c.KeyFile, c.ServerName}, " "), strings.Join([]string{files["ca.crt"], files["client.crt"], files["client.key"], "api.internal"}, " "))
		}},
		{"insecure", []string{"--insecure-skip-tls-verify"}, func(c *rest.Config) string { return diff(fmt.Sprint(c.Insecure), "true") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := kubeOptions{}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(append([]string{"--kubeconfig", kubeconfig}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.restConfig()
			if err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			if d := tc.check(cfg); d != "" {
				t.Errorf("%v: %s", tc.args, d)
			}
		})
	}
}

// diff is "" when got is want, else says both.
func diff(got, want string) string {
	if got == want {
		return ""
	}
	return fmt.Sprintf("got %q, want %q", got, want)
}

// Connection flags that cannot be used are usage errors, named: a
// timeout that is none, and groups or a UID without the user they are of
// (which clientcmd refuses from a kubeconfig, and nsman in a pod).
func TestConnectionFlagErrors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--request-timeout", "soon"}, `--request-timeout "soon": want a duration`},
		{[]string{"--request-timeout", "-5s"}, `--request-timeout "-5s": want a duration`},
		{[]string{"--as-group", "admins"}, "without impersonating a user"},
		{[]string{"--as-uid", "42"}, "without impersonating a user"},
	} {
		for _, command := range [][]string{{"sweep", "--dry-run", "--config-from", "none"}, {"touch", "ns"}} {
			var stdout, stderr bytes.Buffer
			args := slices.Concat(command, []string{"--kubeconfig", kubeconfig}, tc.args)
			if code := Execute(t.Context(), args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("nsman %q: exit %d, %q; want exit %d saying %q", args, code, stderr.String(), ExitUsage, tc.want)
			}
		}
	}
}

// Every command that talks to a cluster takes kubectl's connection flags,
// and its requests carry them: the server and its certificate authority,
// the token (which client-go sends over TLS only) and the impersonation
// reach what it sends. The server here refuses all, as the API server
// refuses a user who may not impersonate: each command exits 2.
func TestEveryCommandConnects(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\""}`)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	connection := []string{"--server", srv.URL, "--certificate-authority", ca, "--token", "alice-token", "--as", "bob", "--as-group", "team", "--request-timeout", "10s"}
	for _, command := range [][]string{
		{"sweep", "--dry-run", "--config-from", "none"}, {"doctor", "--config-from", "none"}, {"hold", "ns", "--for", "1h"},
		{"wake", "ns", "--for", "1h"}, {"touch", "ns"}, {"restore", "ns"}, {"explain", "ns"},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		var stdout, stderr bytes.Buffer
		code := Execute(t.Context(), append(command, connection...), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), `bob`) {
			t.Errorf("nsman %s: exit %d, %q; want exit %d with the refusal to act as bob", command[0], code, stderr.String(), ExitUsage)
		}
		mu.Lock()
		if len(seen) == 0 {
			t.Errorf("nsman %s: no request reached --server", command[0])
		}
		for _, h := range seen {
			if h.Get("Authorization") != "Bearer alice-token" || h.Get("Impersonate-User") != "bob" || h.Get("Impersonate-Group") != "team" {
				t.Errorf("nsman %s: a request with Authorization %q, Impersonate-User %q, Impersonate-Group %q; want the flags'", command[0], h.Get("Authorization"), h.Get("Impersonate-User"), h.Get("Impersonate-Group"))
			}
		}
		mu.Unlock()
	}
}
