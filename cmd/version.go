package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// version is set at link time: -ldflags "-X github.com/nsman/nsman/cmd.version=v1.2.3".
var version = "dev"

// Version returns nsman's version, as set at link time.
func Version() string { return version }

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print nsman's version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "nsman %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
