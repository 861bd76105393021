package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/status"
)

// holdOptions holds the flags of nsman hold.
type holdOptions struct {
	kube      kubeOptions
	forD      time.Duration
	untilTime string
	release   bool
	manager   string
	dryRun    bool
	maxHold   time.Duration
	// now is the clock --for counts from.
	now func() time.Time
}

func newHoldCommand() *cobra.Command {
	o := &holdOptions{now: time.Now}
	c := &cobra.Command{
		Use:   "hold NAMESPACE (--for DURATION | --until TIME | --release)",
		Short: "Keep every manager and rule from acting on a namespace until a time, or one manager with --manager",
		Long: `Writes the annotation ` + status.HoldAnnotation + ` (an RFC 3339 time) on the
namespace, which holds every manager and rule acting on it until then, or
removes it with --release. With --manager NAME, it writes it on that
NamespaceManager in NAMESPACE instead, which holds that manager alone: a
tenant who may not patch the Namespace can still hold its own manager.

A hold ending further ahead than the sweep's --max-hold (default 720h) is
ignored and reported: renewing a hold is a deliberate act.`,
		Example: `  nsman hold preview-4711 --for 48h
  nsman hold preview-4711 --until 2026-12-01T18:00:00Z
  nsman hold preview-4711 --manager preview-4711 --for 24h
  nsman hold preview-4711 --release`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, args[0]) },
	}
	o.kube.addFlags(c.Flags())
	c.Flags().DurationVar(&o.forD, "for", 0, "hold for this long from now (e.g. 48h)")
	c.Flags().StringVar(&o.untilTime, "until", "", "hold until this RFC 3339 time")
	c.Flags().BoolVar(&o.release, "release", false, "remove the hold")
	c.Flags().StringVar(&o.manager, "manager", "", "hold this NamespaceManager in NAMESPACE rather than the namespace")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print the patch that would be sent")
	c.Flags().DurationVar(&o.maxHold, "max-hold", decide.DefaultMaxHold, "refuse a hold ending further ahead than this: the sweep's --max-hold, beyond which it ignores holds (0: the default)")
	return c
}

// until returns when the hold ends, and the zero time for --release.
func (o *holdOptions) until() (time.Time, error) {
	set := 0
	for _, given := range []bool{o.forD != 0, o.untilTime != "", o.release} {
		if given {
			set++
		}
	}
	if set != 1 {
		return time.Time{}, usageError{errors.New("give exactly one of --for, --until and --release")}
	}
	now := o.now()
	var until time.Time
	switch {
	case o.release:
		return time.Time{}, nil
	case o.forD < 0:
		return time.Time{}, usageError{errors.New("--for must be positive")}
	case o.forD > 0:
		until = now.Add(o.forD).Truncate(time.Second)
	default:
		t, err := time.Parse(time.RFC3339, o.untilTime)
		if err != nil {
			return time.Time{}, usageError{fmt.Errorf("--until: %w", err)}
		}
		if !t.After(now) {
			return time.Time{}, usageError{fmt.Errorf("--until %s is not in the future", o.untilTime)}
		}
		until = t
	}
	// 0 is the default, as for a sweep's --max-hold.
	if maxHold := cmp.Or(o.maxHold, decide.DefaultMaxHold); until.Sub(now) > maxHold {
		// A sweep ignores a hold further ahead than its --max-hold: refused
		// here rather than written and ignored there.
		return time.Time{}, usageError{fmt.Errorf("a hold until %s is more than --max-hold %s ahead, which a sweep ignores", until.UTC().Format(time.RFC3339), maxHold)}
	}
	return until.UTC(), nil
}

func (o *holdOptions) run(c *cobra.Command, namespace string) error {
	until, err := o.until()
	if err != nil {
		return err
	}
	target := "namespace " + namespace
	if o.manager != "" {
		target = "manager " + namespace + "/" + o.manager
	}
	what := "released"
	if !until.IsZero() {
		what = "held until " + until.Format(time.RFC3339)
	}
	var clients cluster.Clients
	if !o.dryRun {
		if clients, err = o.kube.clients(); err != nil {
			return err
		}
	}
	patch, err := execute.Hold(c.Context(), clients, namespace, o.manager, until, o.dryRun)
	if err != nil {
		return fmt.Errorf("hold %s: %w", target, err)
	}
	if o.dryRun {
		fmt.Fprintf(c.OutOrStdout(), "%s would be %s: merge patch %s\n", target, what, patch)
		return nil
	}
	fmt.Fprintf(c.OutOrStdout(), "%s %s\n", target, what)
	return nil
}
