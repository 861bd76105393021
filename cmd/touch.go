package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/policy"
)

// touchOptions holds the flags of nsman touch.
type touchOptions struct {
	kube      kubeOptions
	namespace string
	dryRun    bool
	// now is the time written.
	now func() time.Time
}

func newTouchCommand() *cobra.Command {
	o := &touchOptions{now: time.Now}
	c := &cobra.Command{
		Use:   "touch [-n] NAMESPACE...",
		Short: "Say that something happened in namespaces now, for IDLE conditions",
		Long: `Writes the annotation ` + policy.TouchedAnnotation + ` on each namespace: the
time now, RFC 3339 in UTC. An IDLE condition counts it as activity, as it
counts the creation of a pod, ReplicaSet, ControllerRevision or Job: run it
from CI at each deploy to keep a preview environment that is still used.

It needs patch on the namespaces (cluster-scoped): a ClusterRole with
resourceNames limits it to those CI may touch.

Name the namespaces as arguments, or one with -n, as kubectl does.`,
		Example: `  nsman touch preview-4711
  nsman touch -n preview-4711
  nsman touch preview-4711 preview-4712 --dry-run`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, args) },
	}
	o.kube.addFlags(c.Flags())
	namespaceFlag(c.Flags(), &o.namespace)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print the patch that would be sent")
	return c
}

func (o *touchOptions) run(c *cobra.Command, args []string) error {
	namespaces := namespaceArgs(o.namespace, args)
	if len(namespaces) == 0 {
		return usageError{errors.New("give a namespace: NAMESPACE..., or -n NAMESPACE")}
	}
	for _, namespace := range namespaces {
		if problems := validation.IsDNS1123Label(namespace); len(problems) > 0 {
			return usageError{fmt.Errorf("%q is no namespace name: %s", namespace, strings.Join(problems, "; "))}
		}
	}
	var clients cluster.Clients
	if !o.dryRun {
		var err error
		if clients, err = o.kube.reachableClients(); err != nil {
			return err
		}
	}
	at := o.now().UTC().Truncate(time.Second)
	var failed []error
	for _, namespace := range namespaces {
		patch, err := execute.Touch(c.Context(), clients, namespace, at, o.dryRun)
		if err != nil {
			// The others are touched all the same: one namespace gone or
			// forbidden keeps no other from being kept.
			failed = append(failed, fmt.Errorf("touch namespace %s: %w", namespace, err))
			continue
		}
		if o.dryRun {
			fmt.Fprintf(c.OutOrStdout(), "namespace %s would be touched at %s: merge patch %s\n", namespace, at.Format(time.RFC3339), patch)
			continue
		}
		fmt.Fprintf(c.OutOrStdout(), "namespace %s touched at %s\n", namespace, at.Format(time.RFC3339))
	}
	return errors.Join(failed...)
}
