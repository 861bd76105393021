package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/policy"
)

// A dry run from outside the cluster sees what the installed CronJob sees:
// it takes the CronJob's namespace as the one nsman runs in (trusted and
// protected as there) and the CronJob's sweep flags as defaults for those
// not given.

// installedSelector finds nsman's CronJob, as deploy/ and the chart label it;
// found so unasked, it counts only if its pods may act as nsman (bound).
const installedSelector = "app.kubernetes.io/name=nsman"

// Values of --config-from other than NAMESPACE/NAME.
const (
	configFromAuto = "auto"
	configFromNone = "none"
)

// installedFlags are the CronJob's flags a dry run takes, unless given:
// those that decide which managers a sweep sees and what each may do. Not
// taken: output, log and connection flags (this command's own), --dry-run
// and --at, the pod's files and URLs (a dry run sends and pushes nothing;
// a --freeze-file is the pod's, so give its calendar here), --concurrency
// and --chunk-size (they change no outcome), and the shard flags (a dry
// run covers every shard).
var installedFlags = []string{
	"namespace", "selector", "max-actions", "trusted-namespaces", "protected-namespaces",
	"webhook-allow", "max-hold", "claim-ttl", "webhook-timeout", "stuck-after", "reclaim",
	"freeze", "freeze-time-zone", "argocd-namespace",
}

// installation is an nsman CronJob: its namespace and name, the flags of
// its container's sweep, and the ServiceAccount its pods run as.
type installation struct {
	namespace, name string
	args            []string
	serviceAccount  string
	// image is the nsman container's.
	image string
	// cronJob is the CronJob itself.
	cronJob *batchv1.CronJob
}

func (i *installation) String() string { return "CronJob " + i.namespace + "/" + i.name }

// sweepArgs are the flags of the sweep that the container nsman of c
// runs, and its image, or false when it runs none: its args (or its
// command past the binary, then its args) begin with "sweep".
func sweepArgs(c *batchv1.CronJob) ([]string, string, bool) {
	for _, ct := range c.Spec.JobTemplate.Spec.Template.Spec.Containers {
		if ct.Name != "nsman" {
			continue
		}
		all := slices.Concat(ct.Command, ct.Args)
		if len(ct.Command) > 0 {
			all = all[1:]
		}
		if len(all) > 0 && all[0] == "sweep" {
			return all[1:], ct.Image, true
		}
	}
	return nil, "", false
}

// findInstallation returns the CronJob --config-from names: the one nsman
// CronJob of the cluster (auto; nil when none), NAMESPACE/NAME, or nil (none).
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
		if args, image, ok := sweepArgs(c); ok {
			sa := cmp.Or(c.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName, "default")
			found = append(found, &installation{namespace: c.Namespace, name: c.Name, args: args, serviceAccount: sa, image: image, cronJob: c})
		}
	}
	if from == configFromAuto && len(found) > 0 {
		// Anyone who may create a CronJob may label it so: only one whose
		// pods may act as nsman does is taken unasked.
		if found, err = bound(ctx, kube, found); err != nil {
			return nil, fmt.Errorf("look for nsman's CronJob: %w", err)
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

// bound keeps the installations whose ServiceAccount a ClusterRoleBinding
// binds to a ClusterRole that may patch NamespaceManagers, as nsman's
// installs do: a tenant can create a CronJob in its namespace, and label it
// as nsman's, but not such a binding.
func bound(ctx context.Context, kube kubernetes.Interface, found []*installation) ([]*installation, error) {
	bindings, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	roles, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	patchesManagers := map[string]bool{}
	for _, r := range roles.Items {
		patchesManagers[r.Name] = slices.ContainsFunc(r.Rules, func(rule rbacv1.PolicyRule) bool {
			return anyOf(rule.APIGroups, policy.Group) && anyOf(rule.Resources, "namespacemanagers") && anyOf(rule.Verbs, "patch")
		})
	}
	return slices.DeleteFunc(found, func(inst *installation) bool {
		return !slices.ContainsFunc(bindings.Items, func(b rbacv1.ClusterRoleBinding) bool {
			return b.RoleRef.Kind == "ClusterRole" && patchesManagers[b.RoleRef.Name] && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == inst.namespace && s.Name == inst.serviceAccount
			})
		})
	}), nil
}

// anyOf reports whether an RBAC rule's list holds want or "*".
func anyOf(list []string, want string) bool {
	return slices.Contains(list, want) || slices.Contains(list, "*")
}

// sweep is the sweep inst runs: its options and the flags they came from.
func (inst *installation) sweep() (*sweepOptions, *pflag.FlagSet, error) {
	o := newSweepOptions()
	flags := o.command().Flags()
	// An installed nsman newer than this one may pass flags this one does
	// not know; they cannot be among installedFlags.
	flags.ParseErrorsAllowlist.UnknownFlags = true
	if err := flags.Parse(inst.args); err != nil {
		return nil, nil, fmt.Errorf("%s: its sweep's flags: %w", inst, err)
	}
	return o, flags, nil
}

// adopt sets each of installedFlags that inst's sweep sets and flags has
// but was not given to inst's value, and takes inst's namespace as the one
// nsman runs in. It returns the flags it set, as --name=value.
func (o *sweepOptions) adopt(flags *pflag.FlagSet, inst *installation) ([]string, error) {
	_, theirs, err := inst.sweep()
	if err != nil {
		return nil, err
	}
	var taken []string
	for _, name := range installedFlags {
		f := theirs.Lookup(name)
		// flags may be a command's that has only some (nsman doctor's).
		if f == nil || !f.Changed || flags.Lookup(name) == nil || flags.Changed(name) {
			continue
		}
		values := []string{f.Value.String()}
		if s, ok := f.Value.(pflag.SliceValue); ok && f.Value.Type() == "stringArray" {
			// One item at a time: a --freeze range is one item of an
			// array, and joined they would be one range.
			values = s.GetSlice()
		} else if ok {
			values = []string{strings.Join(s.GetSlice(), ",")}
		}
		for _, value := range values {
			if strings.Contains(value, "$(") {
				// The kubelet expands $(VAR) from the pod's environment, which
				// a dry run here does not have: it would see something else.
				return nil, fmt.Errorf("%s: --%s=%s names a variable of its pod's environment; give --%s here, or --config-from none", inst, name, value, name)
			}
			if err := flags.Set(name, value); err != nil {
				return nil, fmt.Errorf("%s: --%s=%s: %w", inst, name, value, err)
			}
			taken = append(taken, "--"+name+"="+value)
		}
	}
	o.own = inst.namespace
	return taken, nil
}

// errNotADryRun: only a dry run from outside takes an installed configuration.
var errNotADryRun = errors.New("--config-from applies to a dry run from outside the cluster only (--dry-run, no $POD_NAMESPACE, and not the in-cluster config)")
