package cmd

import (
	"errors"
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
		Use:   "restore -n NAMESPACE",
		Short: "Undo a SCALE_DOWN: bring back the state recorded on the namespace's workloads (replicas, CronJobs' suspend, KEDA pauses)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if o.namespace == "" {
				return usageError{errors.New("-n NAMESPACE is required")}
			}
			clients, err := o.kube.reachableClients()
			if err != nil {
				return err
			}
			effects, skipped, err := execute.Restore(c.Context(), clients, o.namespace, o.dryRun)
			for _, e := range effects {
				fmt.Fprintln(c.OutOrStdout(), e)
			}
			if len(skipped) > 0 {
				fmt.Fprintf(c.ErrOrStderr(), "nsman: not checked, you may not list them: %s\n", strings.Join(skipped, ", "))
			}
			if len(effects) == 0 && err == nil {
				fmt.Fprintf(c.OutOrStdout(), "nothing to restore in %s\n", o.namespace)
			}
			return err
		},
	}
	o.kube.addFlags(c.Flags())
	c.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace whose workloads to restore")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print what would be restored")
	return c
}
