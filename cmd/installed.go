package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// A dry run outside a pod sees what the installed CronJob sees: it takes
// the CronJob's namespace as the one nsman runs in (trusted and protected
// as there) and the CronJob's sweep flags as defaults for those not given.

// installedSelector finds nsman's CronJob, as deploy/ and the chart label it.
const installedSelector = "app.kubernetes.io/name=nsman"

// Values of --config-from other than NAMESPACE/NAME.
const (
	configFromAuto = "auto"
	configFromNone = "none"
)

// installedFlags are the CronJob's flags a dry run takes, unless given:
// those that decide which managers a sweep sees and what each may do. Not
// taken: output, log and connection flags (this command's own), --dry-run
// and --at, the pod's files and URLs (a dry run sends and pushes nothing),
// --concurrency and --chunk-size (they change no outcome), and the shard
// flags (a dry run covers every shard).
var installedFlags = []string{
	"namespace", "selector", "max-actions", "trusted-namespaces", "protected-namespaces",
	"webhook-allow", "max-hold", "claim-ttl", "webhook-timeout",
}

// installation is an nsman CronJob: its namespace and name, and the flags
// of its container's sweep.
type installation struct {
	namespace, name string
	args            []string
}

func (i *installation) String() string { return "CronJob " + i.namespace + "/" + i.name }

// sweepArgs are the flags of the sweep that container c runs, or false
// when it runs none: its args (or its command past the binary, then its
// args) begin with "sweep".
func sweepArgs(c *batchv1.CronJob) ([]string, bool) {
	for _, ct := range c.Spec.JobTemplate.Spec.Template.Spec.Containers {
		if ct.Name != "nsman" {
			continue
		}
		all := slices.Concat(ct.Command, ct.Args)
		if len(ct.Command) > 0 {
			all = all[1:]
		}
		if len(all) > 0 && all[0] == "sweep" {
			return all[1:], true
		}
	}
	return nil, false
}

// findInstallation returns the CronJob --config-from names: the one nsman
// CronJob of the cluster (auto; nil when there is none), the CronJob
// NAMESPACE/NAME, or nil for none.
func findInstallation(ctx context.Context, kube kubernetes.Interface, from string) (*installation, error) {
	opts := metav1.ListOptions{LabelSelector: installedSelector}
	namespace := ""
	switch from {
	case configFromNone:
		return nil, nil
	case configFromAuto:
	default:
		ns, name, ok := strings.Cut(from, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, usageError{fmt.Errorf("--config-from %q: want auto, none or NAMESPACE/NAME of nsman's CronJob", from)}
		}
		namespace, opts = ns, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	}
	list, err := kube.BatchV1().CronJobs(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("look for nsman's CronJob: %w", err)
	}
	var found []*installation
	for i := range list.Items {
		c := &list.Items[i]
		if args, ok := sweepArgs(c); ok {
			found = append(found, &installation{namespace: c.Namespace, name: c.Name, args: args})
		}
	}
	switch {
	case from != configFromAuto && len(found) == 0:
		return nil, usageError{fmt.Errorf("--config-from %s: no such CronJob running nsman sweep in a container named nsman", from)}
	case len(found) == 0:
		return nil, nil
	case len(found) > 1:
		names := make([]string, len(found))
		for i, f := range found {
			names[i] = f.namespace + "/" + f.name
		}
		return nil, usageError{fmt.Errorf("%d nsman CronJobs in the cluster (%s): name the one to take the configuration of with --config-from NAMESPACE/NAME, or --config-from none", len(found), strings.Join(names, ", "))}
	}
	return found[0], nil
}

// adopt sets each of installedFlags that inst's sweep sets and flags does
// not to inst's value, and takes inst's namespace as the one nsman runs
// in. It returns the flags it set, as --name=value.
func (o *sweepOptions) adopt(flags *pflag.FlagSet, inst *installation) ([]string, error) {
	theirs := newSweepOptions().command().Flags()
	// An installed nsman newer than this one may pass flags this one does
	// not know; they cannot be among installedFlags.
	theirs.ParseErrorsAllowlist.UnknownFlags = true
	if err := theirs.Parse(inst.args); err != nil {
		return nil, fmt.Errorf("%s: its sweep's flags: %w", inst, err)
	}
	var taken []string
	for _, name := range installedFlags {
		f := theirs.Lookup(name)
		if f == nil || !f.Changed || flags.Changed(name) {
			continue
		}
		value := f.Value.String()
		if s, ok := f.Value.(pflag.SliceValue); ok {
			value = strings.Join(s.GetSlice(), ",")
		}
		if err := flags.Set(name, value); err != nil {
			return nil, fmt.Errorf("%s: --%s=%s: %w", inst, name, value, err)
		}
		taken = append(taken, "--"+name+"="+value)
	}
	o.own = inst.namespace
	return taken, nil
}

// errNotADryRun: only a dry run takes an installed configuration.
var errNotADryRun = errors.New("--config-from applies to a dry run outside a pod only (--dry-run)")
