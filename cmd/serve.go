package cmd

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/serve"
)

// newServeCommand wires nsman serve: package serve holds the rest.
func newServeCommand() *cobra.Command {
	kube, log, cfg := kubeOptions{}, logOptions{}, serve.Config{}
	c := &cobra.Command{Use: serve.Use, Short: serve.Short, Long: serve.Long, Example: serve.Example, Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			return serve.Run(c.Context(), cfg, func() (*slog.Logger, error) { return log.logger(c.ErrOrStderr()) }, kube.reachableClients)
		}}
	kube.addFlags(c.Flags())
	log.addFlags(c.Flags())
	cfg.AddFlags(c.Flags())
	return c
}
