package complete

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/connect"
)

// What one completion may read of a cluster: a shell waits on it, and a
// completion offers a person names to pick from, not every one there is.
const (
	// listLimit is the most names one completion lists: a single
	// request, its first page, of metadata alone (annotations dropped as
	// read), so at most this many objects' metadata.
	listLimit = 500
	// timeout is how long a completion waits for the cluster.
	timeout = 2 * time.Second
)

// errEnough ends a list once listLimit names are read.
var errEnough = errors.New("enough names")

// kubeconfigNames completes the names of the kubeconfig's contexts,
// clusters or users (which: --context, --cluster or --user), read from
// the kubeconfig that --kubeconfig or $KUBECONFIG names, asking no
// cluster.
func kubeconfigNames(which string) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = flagValue(c, "kubeconfig")
		raw, err := rules.Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		switch which {
		case "context":
			names = slices.Collect(maps.Keys(raw.Contexts))
		case "cluster":
			names = slices.Collect(maps.Keys(raw.Clusters))
		case "user":
			names = slices.Collect(maps.Keys(raw.AuthInfos))
		}
		return prefixed(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// namespaces completes the names of the cluster's namespaces.
func namespaces(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return prefixed(names(c, "/api", "v1", "namespaces"), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// managers completes the names of the NamespaceManagers of the namespace
// -n or the first argument names; none without one.
func managers(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ns := flagValue(c, "namespace")
	if ns == "" && len(args) > 0 {
		ns = args[0]
	}
	if ns == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	r := cluster.ManagerResource
	return prefixed(names(c, "/apis", r.Group, r.Version, "namespaces", ns, r.Resource), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// names lists the names of the objects at path in the cluster c's flags
// name: one request of metadata, at most listLimit names, within timeout.
// It returns what it read before a failure, nothing when the cluster
// cannot be reached: a completion prints no error.
func names(c *cobra.Command, path ...string) []string {
	cfg, err := connection(c).Config()
	if err != nil {
		return nil
	}
	cfg.Timeout, cfg.WarningHandler, cfg.UserAgent = timeout, rest.NoWarnings{}, "nsman-complete"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	list := func() *rest.Request { return kube.Discovery().RESTClient().Get().AbsPath(path...) }
	var got []string
	_ = cluster.EachMetadata(ctx, listLimit, metav1.ListOptions{}, list, func(o *cluster.ObjectMeta) error {
		if got = append(got, o.Metadata.Name); len(got) >= listLimit {
			return errEnough
		}
		return nil
	})
	return got
}

// connection is the cluster c's connection flags name, as parsed for the
// completion: each given is set again on flags of its name bound anew.
func connection(c *cobra.Command) connect.Flags {
	var f connect.Flags
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&f.Context, "context", "", "")
	connect.Bind(fs, &f.Overrides)
	fs.VisitAll(func(to *pflag.Flag) {
		from := c.Flags().Lookup(to.Name)
		if from == nil || !from.Changed {
			return
		}
		list, isList := from.Value.(pflag.SliceValue)
		if into, ok := to.Value.(pflag.SliceValue); ok && isList {
			_ = into.Replace(list.GetSlice())
			return
		}
		_ = to.Value.Set(from.Value.String())
	})
	return f
}
