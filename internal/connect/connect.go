package connect

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	// The auth plugins kubectl links: OIDC, and the azure and gcp
	// providers of old kubeconfigs, which now say what replaced them
	// (kubelogin, gke-gcloud-auth-plugin). Exec plugins are client-go's.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Flags name a cluster as kubectl's flags do.
type Flags struct {
	// Kubeconfig is --kubeconfig; "" for $KUBECONFIG, ~/.kube/config or
	// the in-cluster config.
	Kubeconfig string
	// Context is --context.
	Context string
	// Overrides are kubectl's other connection flags (Bind), each over
	// what the kubeconfig says.
	Overrides clientcmd.ConfigOverrides
}

// Bind binds kubectl's connection flags to overrides, named, typed and
// shortened (-s) as kubectl's: those of a kubeconfig's cluster and user,
// a user's impersonation, and --request-timeout. Left out: --kubeconfig
// and --context, which the commands bind with their help of old;
// --namespace, which each command binds to its own meaning; --username
// and --password, basic authentication, which no API server has served
// since Kubernetes 1.19; --proxy-url and --disable-compression, which
// kubectl does not bind. The help is nsman's, lower case as every other
// flag's.
func Bind(fs *pflag.FlagSet, overrides *clientcmd.ConfigOverrides) {
	f := clientcmd.RecommendedConfigOverrideFlags("")
	f.CurrentContext, f.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}, clientcmd.FlagInfo{}
	f.AuthOverrideFlags.Username, f.AuthOverrideFlags.Password = clientcmd.FlagInfo{}, clientcmd.FlagInfo{}
	f.ClusterOverrideFlags.ProxyURL, f.ClusterOverrideFlags.DisableCompression = clientcmd.FlagInfo{}, clientcmd.FlagInfo{}
	f.ClusterOverrideFlags.APIServer.ShortName = "s"
	for info, help := range map[*clientcmd.FlagInfo]string{
		&f.AuthOverrideFlags.Impersonate:              "act as this user, as kubectl --as does (impersonation, which your own user must be allowed): --as system:serviceaccount:NAMESPACE:NAME sees what that ServiceAccount, the one nsman's CronJob runs as, may see",
		&f.AuthOverrideFlags.ImpersonateGroups:        "with --as, act as a member of this group (repeatable)",
		&f.AuthOverrideFlags.ImpersonateUID:           "with --as, act as the user of this UID",
		&f.AuthOverrideFlags.Token:                    "bearer token to authenticate to the API server with",
		&f.AuthOverrideFlags.ClientCertificate:        "client certificate file for TLS",
		&f.AuthOverrideFlags.ClientKey:                "client key file for TLS",
		&f.ClusterOverrideFlags.APIServer:             "address and port of the API server",
		&f.ClusterOverrideFlags.CertificateAuthority:  "certificate file of the authority that signed the API server's certificate",
		&f.ClusterOverrideFlags.InsecureSkipTLSVerify: "do not verify the API server's certificate: anyone on the way can then read and change what nsman sends and reads",
		&f.ClusterOverrideFlags.TLSServerName:         "name to verify the API server's certificate against (default: the host of its address)",
		&f.ContextOverrideFlags.ClusterName:           "kubeconfig cluster to use",
		&f.ContextOverrideFlags.AuthInfoName:          "kubeconfig user to use",
		&f.Timeout:                                    "how long one API request may take before it is given up: a duration (30s, 2m) or whole seconds; 0 for no limit",
	} {
		info.Description = help
	}
	clientcmd.BindOverrideFlags(overrides, fs, f)
}

// FlagNames are the names of the flags Bind binds.
func FlagNames() []string {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	Bind(fs, &clientcmd.ConfigOverrides{})
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// Config is the client configuration the flags name, as kubectl's would
// be. Its errors name the flag, or the kubeconfig, at fault.
func (f Flags) Config() (*rest.Config, error) {
	timeout, err := clientcmd.ParseTimeout(cmp.Or(f.Overrides.Timeout, "0"))
	if err != nil || timeout < 0 {
		return nil, fmt.Errorf("--request-timeout %q: want a duration such as 30s or 2m, whole seconds, or 0 for no limit", f.Overrides.Timeout)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	overrides := f.Overrides
	overrides.CurrentContext = f.Context
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides).ClientConfig()
	if err != nil {
		return nil, f.kubeconfigError(err)
	}
	if err := f.overInCluster(cfg, timeout); err != nil {
		return nil, err
	}
	return cfg, nil
}

// overInCluster sets on cfg what client-go's in-cluster config leaves out
// of the connection flags, which takes --server, --token and
// --certificate-authority alone: the impersonation and the timeout. From
// a kubeconfig, clientcmd has set them already, and they are set again
// the same: each flag given over what the kubeconfig's user says. (Over
// plain HTTP, clientcmd drops a user's credentials and impersonation
// alike; the impersonation is kept here: --as never sees more.)
func (f Flags) overInCluster(cfg *rest.Config, timeout time.Duration) error {
	cfg.Timeout = timeout
	as := f.Overrides.AuthInfo
	if as.Impersonate != "" {
		cfg.Impersonate.UserName = as.Impersonate
		cfg.Impersonate.UID = cmp.Or(as.ImpersonateUID, cfg.Impersonate.UID)
		if len(as.ImpersonateGroups) > 0 {
			cfg.Impersonate.Groups = as.ImpersonateGroups
		}
	}
	if cfg.Impersonate.UserName == "" && (as.ImpersonateUID != "" || len(as.ImpersonateGroups) > 0) {
		return errors.New("--as-group and --as-uid need --as: requesting groups or a UID without impersonating a user")
	}
	return nil
}

// InCluster says whether Config is the in-cluster config: no
// --kubeconfig, --context or $KUBECONFIG, no kubeconfig file with anything
// in it, no connection flag naming a cluster (--server; --as, --token
// alone do not), and a pod's environment. It asks what clientcmd's
// deferred loading asks before it falls back to the in-cluster config,
// with dir for the ServiceAccount's files so that tests need no pod.
func (f Flags) InCluster(dir string) bool {
	if f.Kubeconfig != "" || f.Context != "" || os.Getenv("KUBECONFIG") != "" {
		return false
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	raw, err := rules.Load()
	if err != nil || !clientcmdapi.IsConfigEmpty(raw) {
		return false
	}
	if _, err := clientcmd.NewNonInteractiveClientConfig(*raw, "", &f.Overrides, rules).ClientConfig(); !clientcmd.IsEmptyConfig(err) {
		return false
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" || os.Getenv("KUBERNETES_SERVICE_PORT") == "" {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "token"))
	return err == nil
}

// kubeconfigError is err, a kubeconfig's that failed to load, naming the
// kubeconfig as it was given when it does not exist or cannot be read:
// --kubeconfig, else each file of $KUBECONFIG that is so. Only a load that
// failed is looked at: files of $KUBECONFIG that do not exist are skipped
// by clientcmd, as by kubectl.
func (f Flags) kubeconfigError(err error) error {
	if f.Kubeconfig != "" {
		if problem := unreadable(f.Kubeconfig); problem != "" {
			return fmt.Errorf("--kubeconfig %s %s", f.Kubeconfig, problem)
		}
		return err
	}
	env := os.Getenv("KUBECONFIG")
	var problems []string
	for _, path := range filepath.SplitList(env) {
		if problem := unreadable(path); path != "" && problem != "" {
			problems = append(problems, path+" "+problem)
		}
	}
	if len(problems) == 0 {
		return err
	}
	return fmt.Errorf("KUBECONFIG=%s: %s: %w", env, strings.Join(problems, "; "), err)
}

// unreadable says why the file at path cannot be read, or "" when it can.
func unreadable(path string) string {
	f, err := os.Open(path)
	if err == nil {
		_, err = f.Read(make([]byte, 1))
		f.Close()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil && !errors.Is(err, io.EOF):
		return "cannot be read: " + err.Error()
	}
	return ""
}
