package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/explain"
)

// The namespace nsman runs in is trusted and protected: it comes from
// $POD_NAMESPACE, or from the ServiceAccount's file only when nsman sweeps
// through the in-cluster config. A CI runner's pod has that file too, and
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
