package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/sweep"
)

// holdOptions holds the flags of nsman hold.
type holdOptions struct {
	kube    kubeOptions
	forD    time.Duration
	until   string
	release bool
	manager string
	dryRun  bool
	maxHold time.Duration
	// now is the clock --for counts from.
	now func() time.Time
}

func newHoldCommand() *cobra.Command {
	o := &holdOptions{now: time.Now}
	c := &cobra.Command{
		Use:   "hold NAMESPACE (--for DURATION | --until TIME | --release)",
		Short: "Keep every manager and rule from acting on a namespace until a time, or one manager with --manager",
		Long: `Writes the annotation ` + sweep.HoldAnnotation + ` (an RFC 3339 time) on the
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
	c.Flags().StringVar(&o.until, "until", "", "hold until this RFC 3339 time")
	c.Flags().BoolVar(&o.release, "release", false, "remove the hold")
	c.Flags().StringVar(&o.manager, "manager", "", "hold this NamespaceManager in NAMESPACE rather than the namespace")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "make no change; print the patch that would be sent")
	c.Flags().DurationVar(&o.maxHold, "max-hold", sweep.DefaultMaxHold, "refuse a hold ending further ahead than this: the sweep's --max-hold, beyond which it ignores holds")
	return c
}

// patch returns the merge patch that sets or removes the hold.
func (o *holdOptions) patch() ([]byte, string, error) {
	set := 0
	for _, given := range []bool{o.forD != 0, o.until != "", o.release} {
		if given {
			set++
		}
	}
	if set != 1 {
		return nil, "", usageError{errors.New("give exactly one of --for, --until and --release")}
	}
	var value any // nil removes the annotation in a merge patch
	now := o.now()
	switch {
	case o.forD < 0:
		return nil, "", usageError{errors.New("--for must be positive")}
	case o.forD > 0:
		value = now.Add(o.forD).UTC().Truncate(time.Second).Format(time.RFC3339)
	case o.until != "":
		until, err := time.Parse(time.RFC3339, o.until)
		if err != nil {
			return nil, "", usageError{fmt.Errorf("--until: %w", err)}
		}
		if !until.After(now) {
			return nil, "", usageError{fmt.Errorf("--until %s is not in the future", o.until)}
		}
		value = until.UTC().Format(time.RFC3339)
	}
	if v, ok := value.(string); ok {
		// A sweep ignores a hold further ahead than its --max-hold:
		// refused here rather than written and ignored there.
		if until, _ := time.Parse(time.RFC3339, v); until.Sub(now) > o.maxHold {
			return nil, "", usageError{fmt.Errorf("a hold until %s is more than --max-hold %s ahead, which a sweep ignores", v, o.maxHold)}
		}
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{sweep.HoldAnnotation: value}}})
	if err != nil {
		return nil, "", err
	}
	what := "released"
	if value != nil {
		what = "held until " + value.(string)
	}
	return body, what, nil
}

func (o *holdOptions) run(c *cobra.Command, namespace string) error {
	body, what, err := o.patch()
	if err != nil {
		return err
	}
	target := "namespace " + namespace
	if o.manager != "" {
		target = "manager " + namespace + "/" + o.manager
	}
	if o.dryRun {
		fmt.Fprintf(c.OutOrStdout(), "%s would be %s: merge patch %s\n", target, what, body)
		return nil
	}
	clients, err := o.kube.clients()
	if err != nil {
		return err
	}
	ctx := c.Context()
	if o.manager == "" {
		_, err = clients.Kube.CoreV1().Namespaces().Patch(ctx, namespace, types.MergePatchType, body, metav1.PatchOptions{})
	} else {
		err = clients.Managers.Patch(types.MergePatchType).Namespace(namespace).Resource(sweep.ManagerResource.Resource).Name(o.manager).Body(body).Do(ctx).Error()
	}
	if err != nil {
		return fmt.Errorf("hold %s: %w", target, err)
	}
	fmt.Fprintf(c.OutOrStdout(), "%s %s\n", target, what)
	return nil
}
