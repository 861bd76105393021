package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/status"
)

func newHoldCommand() *cobra.Command {
	o := &untilOptions{now: time.Now, noun: "hold", done: "held", released: "released", write: execute.Hold}
	c := &cobra.Command{
		Use:   "hold [-n] NAMESPACE (--for DURATION | --until TIME | --release)",
		Short: "Keep every manager and rule from acting on a namespace until a time, or one manager with --manager",
		Long: `Writes the annotation ` + status.HoldAnnotation + ` (an RFC 3339 time) on the
namespace, which holds every manager and rule acting on it until then, or
removes it with --release. With --manager NAME, it writes it on that
NamespaceManager in NAMESPACE instead, which holds that manager alone: a
tenant who may not patch the Namespace can still hold its own manager.

A hold ending further ahead than the sweep's --max-hold (default 30d) is
ignored and reported: renewing a hold is a deliberate act.

Name the namespace as an argument or with -n, as kubectl does; --for takes
days and weeks (2d, 1w) as well as Go durations.`,
		Example: `  nsman hold preview-4711 --for 48h
  nsman hold -n preview-4711 --for 2d
  nsman hold preview-4711 --until 2026-12-01T18:00:00Z
  nsman hold preview-4711 --manager preview-4711 --for 24h
  nsman hold preview-4711 --release`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return o.runArgs(c, args) },
	}
	o.kube.addFlags(c.Flags())
	namespaceFlag(c.Flags(), &o.namespace)
	durationVar(c.Flags(), &o.forD, "for", 0, "hold for this long from now (e.g. 48h, 2d or 1w)")
	c.Flags().StringVar(&o.untilTime, "until", "", "hold until this RFC 3339 time")
	c.Flags().BoolVar(&o.release, "release", false, "remove the hold")
	c.Flags().StringVar(&o.manager, "manager", "", "hold this NamespaceManager in NAMESPACE rather than the namespace")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print the patch that would be sent")
	durationVar(c.Flags(), &o.maxHold, "max-hold", decide.DefaultMaxHold, "refuse a hold ending further ahead than this: the sweep's --max-hold, beyond which it ignores holds")
	return c
}
