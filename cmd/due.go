package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/due"
	"github.com/nsman/nsman/internal/complete"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
)

func newDueCommand() *cobra.Command {
	o, opts := newSweepOptions(), &due.Options{}
	o.dryRun, o.output, o.concurrency, o.shardCount = true, "text", sweep.DefaultConcurrency, 1
	c := &cobra.Command{
		Use:   "due",
		Short: "List what will act within a time, sorted by when, and what delays it",
		Long: `Runs a dry run now, then one at each due time it finds within --within (as
nsman sweep --dry-run --at does): what acts then, or what puts it off, a hold,
a window closed then, a freeze, a webhook's backoff. It reads what a dry run
reads and writes nothing. From outside the cluster it takes the flags of
nsman's CronJob as nsman sweep --dry-run does (--config-from); --max-actions
is left out: it spreads what is due over sweeps.

Exit status: 0 when it could tell (nothing due included), 1 when a manager
could not be evaluated or it was interrupted, 2 on a usage error or when the
cluster cannot be reached.`,
		Example: `  nsman due
  nsman due --within 2d -n team-a -o wide
  nsman due -A -o json | jq '.due[] | select(.delayedBy)'
  nsman due --within 1h -o name`,
		Args: usageArgs(cobra.NoArgs),
		// -A is every namespace, whatever -n nsman's CronJob sweeps with.
		PreRunE: func(c *cobra.Command, _ []string) error { return allNamespaces(c, opts) },
		RunE:    func(c *cobra.Command, _ []string) error { return o.due(c, opts) },
	}
	o.addDecisionFlags(c.Flags())
	// Each dry run logs what it plans at info: here only warnings, unless asked.
	c.Flags().Lookup("log-level").DefValue, o.log.level = "warn", "warn"
	opts.AddFlags(c.Flags())
	complete.Choices(c, "output", due.Formats...)
	return c
}

// allNamespaces marks -n given, empty, when -A is: a dry run then takes no
// -n of nsman's CronJob (adopt).
func allNamespaces(c *cobra.Command, opts *due.Options) error {
	if !opts.AllNamespaces || c.Flags().Changed("namespace") {
		return nil
	}
	return c.Flags().Set("namespace", "")
}

// due runs nsman due: the dry runs due.Look asks for, each a sweep with
// this command's flags at a time, then prints what they told.
func (o *sweepOptions) due(c *cobra.Command, opts *due.Options) error {
	log, err := o.log.logger(c.ErrOrStderr())
	if err != nil {
		return err
	}
	if err := opts.Check(o.namespace); err != nil {
		return usageError{err}
	}
	cfg, err := o.config(c.Flags())
	if err != nil {
		return usageError{err}
	}
	clients, err := o.kube.clients()
	if err != nil {
		return err
	}
	if cfg, err = o.asInstalled(c.Context(), c.Flags(), clients.Kube, cfg, log); err != nil {
		return err
	}
	cfg.MaxActions, cfg.SkipReclaim = 0, true
	// The dry runs after the first log errors alone: the first warned.
	later := log
	if o.log.level != "debug" {
		if later, err = newLogger(o.log.format, "error", c.ErrOrStderr()); err != nil {
			return err
		}
	}
	l, err := opts.Look(c.Context(), func(ctx context.Context, at time.Time) (report.Report, error) {
		cfg.At = at
		sweeper, err := sweep.New(cfg, clients, nil, log)
		log = later
		if err != nil {
			return report.Report{}, err
		}
		return sweeper.Run(ctx)
	})
	switch {
	case errors.Is(err, sweep.ErrInterrupted):
		return err
	case err != nil:
		return usageError{err}
	}
	if err := opts.Print(c.OutOrStdout(), c.ErrOrStderr(), l); err != nil || len(l.Failed) == 0 {
		return err
	}
	return fmt.Errorf("%d could not be evaluated, what is due of them unknown: %s", len(l.Failed), strings.Join(l.Failed, "; "))
}
