package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/internal/execute"
)

// restoreOptions holds the flags of nsman restore.
type restoreOptions struct {
	kube      kubeOptions
	namespace string
	dryRun    bool
}

func newRestoreCommand() *cobra.Command {
	o := &restoreOptions{}
	c := &cobra.Command{
		Use:   "restore [-n] NAMESPACE",
		Short: "Undo a SCALE_DOWN: bring back the state recorded on the namespace's workloads (replicas, CronJobs' suspend, KEDA pauses)",
		Long: `Brings back what SCALE_DOWN recorded on each workload of the namespace that
carries a record and is still asleep: a Deployment's, StatefulSet's or other
scaled kind's replicas, a CronJob's suspend, a KEDA ScaledObject's pause, a
LoadBalancer parked, an object of a custom resource's kind a sleep's
patches changed; then removes the record. A workload changed since is left as it is, with a
line that says so, and its record removed. A kind you may not list is
skipped and named on stderr.

Name the namespace as an argument or with -n, as kubectl does.

Exit status: 0 when restored, or nothing to restore; 1 when a list or a
patch failed (every other workload is still restored); 2 on a usage error
or when the cluster cannot be reached.`,
		Example: `  nsman restore review-4711 --dry-run
  nsman restore -n review-4711`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, args) },
	}
	o.kube.addFlags(c.Flags())
	namespaceFlag(c.Flags(), &o.namespace)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print what would be restored")
	return c
}

func (o *restoreOptions) run(c *cobra.Command, args []string) error {
	namespace, err := oneNamespace(o.namespace, args)
	if err != nil {
		return err
	}
	clients, err := o.kube.reachableClients()
	if err != nil {
		return err
	}
	effects, skipped, err := execute.Restore(c.Context(), clients, namespace, o.dryRun)
	for _, e := range effects {
		fmt.Fprintln(c.OutOrStdout(), e)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(c.ErrOrStderr(), "nsman: not checked, you may not list them: %s\n", strings.Join(skipped, ", "))
	}
	if len(effects) == 0 && err == nil {
		fmt.Fprintf(c.OutOrStdout(), "nothing to restore in %s\n", namespace)
	}
	return err
}
