package cmd

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/explain"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/connect"
)

// kubeOptions are the flags that reach a cluster, as kubectl users expect:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the in-cluster
// config, and kubectl's connection flags over what that names.
type kubeOptions struct {
	kubeconfig string
	context    string
	// overrides are kubectl's other connection flags (connect.Bind), so
	// that --server, --token or --as mean here what they mean to kubectl.
	overrides clientcmd.ConfigOverrides
	qps       float32
	burst     int
	// quiet drops the API server's warnings (nsman explain lists every
	// resource, deprecated ones too).
	quiet bool
	// serviceAccountDir is where a test puts a pod's ServiceAccount
	// files (default: the constant serviceAccountDir).
	serviceAccountDir string
}

func (o *kubeOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context to use")
	connect.Bind(fs, &o.overrides)
	fs.Float32Var(&o.qps, "qps", 500, "API requests per second the client may make")
	fs.IntVar(&o.burst, "burst", 1000, "API requests the client may burst above --qps")
}

// cluster is the cluster these flags name, as the commands that nsman
// explain prints name it: the kubeconfig made absolute, so that a
// command pasted in another directory reads the same file.
func (o *kubeOptions) cluster() explain.Cluster {
	c := explain.Cluster{Kubeconfig: o.kubeconfig, Context: o.context}
	if abs, err := filepath.Abs(c.Kubeconfig); c.Kubeconfig != "" && err == nil {
		c.Kubeconfig = abs
	}
	return c
}

// clients builds the API clients, all observed by one APIObserver.
func (o *kubeOptions) clients() (cluster.Clients, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return cluster.Clients{}, err
	}
	c, err := NewClients(cfg, cluster.NewAPIObserver(nil))
	if err != nil {
		return c, usageError{err}
	}
	return c, nil
}

// restConfig is the client configuration these flags name, as kubectl's
// would be, but for nsman's rate limits and user agent.
func (o *kubeOptions) restConfig() (*rest.Config, error) {
	cfg, err := o.connection().Config()
	if err != nil {
		return nil, usageError{err}
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	if o.quiet {
		cfg.WarningHandler = rest.NoWarnings{}
	}
	cfg.UserAgent = "nsman/" + Version()
	return cfg, nil
}

// connection is the cluster these flags name.
func (o *kubeOptions) connection() connect.Flags {
	return connect.Flags{Kubeconfig: o.kubeconfig, Context: o.context, Overrides: o.overrides}
}

// ownClient is kube, or, where the connection acts as another user (--as,
// or a kubeconfig's as), a client of these credentials' own user: what a
// command looks up for itself (nsman's CronJob, for --config-from) is the
// caller's to read, not the user's it acts as, which as nsman's
// ServiceAccount may not list ClusterRoleBindings. kube where no other
// client can be made (clients() said why).
func (o *kubeOptions) ownClient(kube kubernetes.Interface) kubernetes.Interface {
	cfg, err := o.restConfig()
	if err != nil || cfg.Impersonate.UserName == "" && cfg.Impersonate.UID == "" && len(cfg.Impersonate.Groups) == 0 && len(cfg.Impersonate.Extra) == 0 {
		return kube
	}
	cfg.Impersonate = rest.ImpersonationConfig{}
	if own, err := kubernetes.NewForConfig(cfg); err == nil {
		return own
	}
	return kube
}

// reachableClients are clients() of a cluster that answered its version:
// a command says the cluster cannot be reached, or refused its
// credentials, as a usage error (exit 2) rather than report each of its
// requests failed.
func (o *kubeOptions) reachableClients() (cluster.Clients, error) {
	c, err := o.clients()
	if err != nil {
		return c, err
	}
	// Forbidden, the version every user may read: --as names a user
	// these credentials may not act as (its error says "unknown").
	_, err = c.Kube.Discovery().ServerVersion()
	if as := o.overrides.AuthInfo.Impersonate; as != "" && apierrors.IsForbidden(err) {
		return c, usageError{fmt.Errorf("the cluster refused to let these credentials act as %s (--as): they cannot impersonate it: %w", as, err)}
	}
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return c, usageError{fmt.Errorf("the cluster refused these credentials: %w", err)}
	} else if err != nil {
		return c, usageError{fmt.Errorf("the cluster cannot be reached: %w", err)}
	}
	return c, nil
}

// NewClients builds the API clients a sweep uses from cfg, all observed by
// observer.
func NewClients(cfg *rest.Config, observer *cluster.APIObserver) (cluster.Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(observer.Wrap)
	c := cluster.Clients{Observer: observer}
	var err error
	if c.Managers, err = managersClient(cfg); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return c, err
	}
	return c, nil
}

// managersClient is a REST client for the NamespaceManager API group that
// speaks JSON, the only encoding custom resources are served in.
func managersClient(cfg *rest.Config) (rest.Interface, error) {
	cfg = dynamic.ConfigFor(cfg)
	gv := cluster.ManagerResource.GroupVersion()
	cfg.GroupVersion, cfg.APIPath = &gv, "/apis"
	return rest.RESTClientFor(cfg)
}

// serviceAccountDir is where a pod's ServiceAccount token and namespace
// are mounted, and where client-go's in-cluster config reads them.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ownNamespace is the namespace nsman runs in, which it trusts and
// protects: $POD_NAMESPACE when set (deploy/ and the chart set it from the
// pod's metadata.namespace), else its ServiceAccount's, but only when nsman
// reaches the cluster through the in-cluster config. With a kubeconfig
// nsman sweeps a cluster from outside whatever pod it runs in: a CI
// runner's pod has a ServiceAccount too, and the runner's namespace, in
// the runner's cluster, is nothing the swept cluster's platform team chose
// to trust.
func (o *kubeOptions) ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	dir := cmp.Or(o.serviceAccountDir, serviceAccountDir)
	if !o.connection().InCluster(dir) {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(dir, "namespace"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// logOptions choose the log format and level. Logs go to stderr.
type logOptions struct {
	format string
	level  string
}

func (o *logOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.format, "log-format", "", "log format: json or text (default: json in a pod, text elsewhere)")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
}

func (o *logOptions) logger(w io.Writer) (*slog.Logger, error) {
	return newLogger(o.format, o.level, w)
}
