package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/status"
)

// newWakeOptions are nsman wake's options before its flags are parsed.
func newWakeOptions() *untilOptions {
	return &untilOptions{now: time.Now, noun: "wake", done: "woken", released: "released from its wake", write: execute.WakeUntil}
}

func newWakeCommand() *cobra.Command {
	o := newWakeOptions()
	c := &cobra.Command{
		Use:   "wake [-n] NAMESPACE (--for DURATION | --until TIME | --release)",
		Short: "Wake a namespace that a SLEEP policy keeps asleep until a time, or from one manager's sleep with --manager",
		Long: `Writes the annotation ` + status.WakeAnnotation + ` (an RFC 3339 time) on the
namespace, or removes it with --release. The next sweep wakes the namespace
from the sleep of every SLEEP policy acting on it and keeps it awake until
then; the first sweep after that time puts it to sleep again if its policy
still holds. With --manager NAME, it writes it on that NamespaceManager in
NAMESPACE instead, which wakes the namespace from that manager's sleep
alone: a tenant who may not patch the Namespace can still wake what its
own manager put to sleep.

A wake ending further ahead than the sweep's --max-hold (default 30d) is
ignored and reported, as such a hold is: waking for long is a deliberate
act.

Name the namespace as an argument or with -n, as kubectl does; --for takes
days and weeks (1d12h, 1w) as well as Go durations.`,
		Example: `  nsman wake dev-alice --for 2h
  nsman wake -n dev-alice --for 1d12h
  nsman wake dev-alice --until 2026-12-01T22:00:00Z
  nsman wake preview-4711 --manager preview-4711 --for 8h
  nsman wake dev-alice --release`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return o.runArgs(c, args) },
	}
	o.kube.addFlags(c.Flags())
	namespaceFlag(c.Flags(), &o.namespace)
	durationVar(c.Flags(), &o.forD, "for", 0, "wake for this long from now (e.g. 2h or 1d12h)")
	c.Flags().StringVar(&o.untilTime, "until", "", "wake until this RFC 3339 time")
	c.Flags().BoolVar(&o.release, "release", false, "remove the wake: the next sweep puts the namespace to sleep again if its policy holds")
	c.Flags().StringVar(&o.manager, "manager", "", "write the wake on this NamespaceManager in NAMESPACE rather than on the namespace")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print the patch that would be sent")
	durationVar(c.Flags(), &o.maxHold, "max-hold", decide.DefaultMaxHold, "refuse a wake ending further ahead than this: the sweep's --max-hold, beyond which it ignores wakes as it ignores holds")
	return c
}
