package connect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// client-go's in-cluster config takes --server, --token and
// --certificate-authority alone: nsman sets the impersonation and the
// timeout on it, so that --as in nsman's own pod acts as it does from a
// kubeconfig.
func TestConnectionFlagsOverInClusterConfig(t *testing.T) {
	var f Flags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	Bind(fs, &f.Overrides)
	if err := fs.Parse([]string{"--as", "system:serviceaccount:team-a:ci", "--as-group", "system:serviceaccounts", "--request-timeout", "1m"}); err != nil {
		t.Fatal(err)
	}
	// As rest.InClusterConfig makes it.
	cfg := &rest.Config{Host: "https://10.0.0.1:443", BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
	if err := f.overInCluster(cfg, time.Minute); err != nil {
		t.Fatal(err)
	}
	want := rest.ImpersonationConfig{UserName: "system:serviceaccount:team-a:ci", Groups: []string{"system:serviceaccounts"}}
	if fmt.Sprint(cfg.Impersonate) != fmt.Sprint(want) || cfg.Timeout != time.Minute {
		t.Errorf("in-cluster config: impersonate %+v, timeout %s; want %+v, 1m", cfg.Impersonate, cfg.Timeout, want)
	}
	var groupsAlone Flags
	groupsAlone.Overrides.AuthInfo.ImpersonateGroups = []string{"admins"}
	if err := groupsAlone.overInCluster(&rest.Config{}, 0); err == nil || !strings.Contains(err.Error(), "without impersonating a user") {
		t.Errorf("--as-group alone on the in-cluster config: %v; want it refused", err)
	}
}

// Bind binds the flags kubectl binds for a connection, under kubectl's
// names and shorthand, and none that a command binds itself.
func TestBind(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	Bind(fs, &clientcmd.ConfigOverrides{})
	want := []string{"as", "as-group", "as-uid", "certificate-authority", "client-certificate", "client-key", "cluster", "insecure-skip-tls-verify", "request-timeout", "server", "tls-server-name", "token", "user"}
	if got := FlagNames(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("FlagNames() = %v, want %v", got, want)
	}
	if f := fs.ShorthandLookup("s"); f == nil || f.Name != "server" {
		t.Errorf("-s is %v, want --server", f)
	}
	if f := fs.Lookup("as-group"); f == nil || f.Value.Type() != "stringArray" {
		t.Errorf("--as-group is %v, want a repeatable stringArray as kubectl's", f)
	}
}
