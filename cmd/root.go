package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	// ExitOK means every attempted action succeeded.
	ExitOK = 0
	// ExitFailed means at least one manager or action failed.
	ExitFailed = 1
	// ExitUsage means the command could not run: a bad flag, no cluster, a
	// missing CRD.
	ExitUsage = 2
)

// usageError marks an error that stems from how the command was invoked, so
// that Execute maps it to ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// newRootCommand builds the command tree. Output goes to the given writers so
// that tests can capture it.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "nsman",
		Short:         "Delete, scale down or notify ephemeral namespaces when their NamespaceManager says so",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable so that an unknown command is a usage error rather than
		// cobra's plain error.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q; see 'nsman --help'", args[0])}
			}
			return c.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCommand(), newSweepCommand(), newValidateCommand(), newRestoreCommand())
	return root
}

// Execute runs nsman with args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "nsman: %v\n", err)
	var usage usageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitFailed
}

// usageArgs marks the errors of an argument validator as usage errors.
func usageArgs(validate cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := validate(c, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
