package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/doctor"
	"github.com/nsman/nsman/internal/complete"
	"github.com/nsman/nsman/internal/connect"
	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/webhook"
)

// doctorFlags are the sweep flags nsman doctor takes: those that decide
// what its checks judge against, and kubectl's connection flags
// (connect.FlagNames).
var doctorFlags = []string{"kubeconfig", "context", "trusted-namespaces", "protected-namespaces", "webhook-allow"}

func newDoctorCommand() *cobra.Command {
	o := newSweepOptions()
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the cluster as a sweep would see it, and say what to fix",
		Long: `Checks the current context as a sweep would see it: the API server's version
against the minimum nsman needs; the NamespaceManager CRD (missing, the original
operator's and what it cannot hold, or nsman's but older than this binary and the
fields it would prune); every permission a sweep uses (an access review each,
naming each missing one); which kinds of the objects that own namespaces (Argo
CD's Application, Flux's Kustomization and HelmRelease) are served and nsman
may list; the namespace nsman runs in, and the trusted and
protected namespaces that follow from it (a trusted one that does not exist
fails: whoever creates it gets trusted managers); the webhook address policy in force; the installed CronJob (its
ServiceAccount, suspended, --dry-run, its last sweep) and the admission policy
that fences it; and whether the Java operator nsman replaces still runs beside
it.

In a pod it checks its own ServiceAccount. Elsewhere it takes the namespace and
flags of nsman's CronJob as a dry run does (--config-from) and checks the
CronJob's ServiceAccount (a SubjectAccessReview each; your own permissions when
you may not create those). It changes nothing.

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 on
a usage error or when the cluster cannot be reached.`,
		Example: `  nsman doctor
  nsman doctor -o json | jq '.checks[] | select(.status != "ok")'
  nsman doctor -o name`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return o.doctor(c) },
	}
	sweepFlags := o.command().Flags()
	for _, name := range slices.Concat(doctorFlags, connect.FlagNames()) {
		c.Flags().AddFlag(sweepFlags.Lookup(name))
	}
	c.Flags().StringVarP(&o.output, "output", "o", "text", "report format: text, wide (an ABOUT column besides: what each check looks at), json, yaml or name (a line per check that did not pass, failed or warned: check/NAME)")
	complete.Choices(c, "output", printer.Formats...)
	c.Flags().StringVar(&o.configFrom, "config-from", configFromAuto, "from outside the cluster (no $POD_NAMESPACE, not the in-cluster config): judge as nsman's CronJob in the cluster sweeps, taking its namespace, its ServiceAccount and those of its flags not given here: auto (the one labelled "+installedSelector+", if any), NAMESPACE/NAME, or none")
	return c
}

func (o *sweepOptions) doctor(c *cobra.Command) error {
	flags := c.Flags()
	if err := printer.CheckFormat(o.output, printer.Formats); err != nil {
		return usageError{err}
	}
	if _, err := o.config(flags); err != nil {
		return usageError{err}
	}
	if _, err := webhook.ParseAllowList(o.webhookAllow); err != nil {
		return usageError{fmt.Errorf("--webhook-allow: %w", err)}
	}
	clients, err := o.kube.reachableClients()
	if err != nil {
		return err
	}
	opts := doctor.Options{Version: Version()}
	if own := o.kube.ownNamespace(); own != "" {
		if o.configFrom != configFromAuto && o.configFrom != configFromNone {
			return usageError{fmt.Errorf("--config-from applies from outside the cluster only (no $POD_NAMESPACE, and not the in-cluster config)")}
		}
		opts.Namespaces.Own, opts.Namespaces.From = own, "its pod"
		opts.InPod = true
	} else if err := o.judgeAsInstalled(c.Context(), clients.Kube, flags, &opts); err != nil {
		return err
	}
	cfg, err := o.config(flags)
	if err != nil {
		return usageError{err}
	}
	opts.Namespaces.Trusted, opts.Namespaces.Protected = cfg.TrustedNamespaces, cfg.ProtectedNamespaces
	if opts.Allow, err = webhook.ParseAllowList(o.webhookAllow); err != nil {
		return usageError{fmt.Errorf("--webhook-allow: %w", err)}
	}
	report := doctor.Run(c.Context(), clients.Kube, clients.Dynamic, opts)
	if err := printDoctor(c.OutOrStdout(), o.output, report); err != nil {
		return err
	}
	if failed := report.Count(doctor.Failed); failed > 0 {
		return fmt.Errorf("%d check(s) failed", failed)
	}
	return nil
}

// judgeAsInstalled fills opts with what nsman's CronJob, as --config-from
// finds it, tells: its namespace, the CronJob itself; its flags become the
// defaults of those not given.
func (o *sweepOptions) judgeAsInstalled(ctx context.Context, kube kubernetes.Interface, flags *pflag.FlagSet, opts *doctor.Options) error {
	explicit := o.configFrom != configFromAuto && o.configFrom != configFromNone
	inst, err := findInstallation(ctx, kube, o.configFrom)
	switch {
	case err != nil && explicit:
		return usageError{err}
	case err != nil:
		opts.Namespaces.Problem = err.Error()
		return nil
	case inst == nil:
		return nil
	}
	if _, err := o.adopt(flags, inst); err != nil {
		return usageError{err}
	}
	theirs, _, err := inst.sweep()
	if err != nil {
		return usageError{err}
	}
	opts.Namespaces.Own, opts.Namespaces.From = inst.namespace, inst.String()
	opts.Installed = &doctor.Installed{CronJob: inst.cronJob, ServiceAccount: inst.serviceAccount, Image: inst.image, DryRun: theirs.dryRun}
	return nil
}

// printDoctor prints r as format asks.
func printDoctor(w io.Writer, format string, r doctor.Report) error {
	return printer.Object(w, format, r, func(w io.Writer, format string) error {
		if format == printer.Name {
			return printer.WriteNames(w, r.Names())
		}
		return doctor.WriteText(w, r, format == printer.Wide)
	})
}
