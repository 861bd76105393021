package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/policy/durtext"
)

// untilOptions holds the flags of nsman hold and nsman wake: each writes an
// annotation ending at a time on a namespace, or on one manager in it, and a
// sweep ignores either beyond its --max-hold, so both refuse such a time
// alike.
type untilOptions struct {
	kube      kubeOptions
	namespace string
	forD      time.Duration
	untilTime string
	release   bool
	manager   string
	dryRun    bool
	maxHold   time.Duration
	// now is the clock --for counts from.
	now func() time.Time
	// noun names the annotation in messages ("hold"); done says what it
	// makes of its target until a time ("held"), released what removing it
	// does ("released").
	noun, done, released string
	// write sends the annotation, or with dryRun only returns the patch.
	write func(ctx context.Context, clients cluster.Clients, namespace, manager string, until time.Time, dryRun bool) ([]byte, error)
}

// until returns when the annotation ends, and the zero time for --release.
func (o *untilOptions) until() (time.Time, error) {
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
		// A sweep ignores an annotation further ahead than its --max-hold:
		// refused here rather than written and ignored there.
		return time.Time{}, usageError{fmt.Errorf("a %s until %s is more than --max-hold %s ahead, which a sweep ignores", o.noun, until.UTC().Format(time.RFC3339), durtext.Format(maxHold))}
	}
	return until.UTC(), nil
}

// runArgs runs on the namespace args or -n name.
func (o *untilOptions) runArgs(c *cobra.Command, args []string) error {
	namespace, err := oneNamespace(o.namespace, args)
	if err != nil {
		return err
	}
	return o.run(c, namespace)
}

func (o *untilOptions) run(c *cobra.Command, namespace string) error {
	until, err := o.until()
	if err != nil {
		return err
	}
	target := "namespace " + namespace
	if o.manager != "" {
		target = "manager " + namespace + "/" + o.manager
	}
	what := o.released
	if !until.IsZero() {
		what = o.done + " until " + until.Format(time.RFC3339)
	}
	var clients cluster.Clients
	if !o.dryRun {
		if clients, err = o.kube.reachableClients(); err != nil {
			return err
		}
	}
	patch, err := o.write(c.Context(), clients, namespace, o.manager, until, o.dryRun)
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.noun, target, err)
	}
	if o.dryRun {
		fmt.Fprintf(c.OutOrStdout(), "%s would be %s: merge patch %s\n", target, what, patch)
		return nil
	}
	fmt.Fprintf(c.OutOrStdout(), "%s %s\n", target, what)
	return nil
}
