package cmd

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/complete"
	"github.com/nsman/nsman/internal/console"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/internal/prom"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/metrics"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/webhook"
)

// sweepOptions holds the flags of nsman sweep.
type sweepOptions struct {
	kube kubeOptions
	log  logOptions
	prom prom.Options

	output                              string
	states                              []string
	printed                             []report.State // of the entries printed: states, parsed
	noColor                             bool
	namespace                           string
	selector                            string
	dryRun                              bool
	at                                  string
	maxActions                          int
	concurrency                         int
	trustedNamespaces                   []string
	protectedNamespaces                 []string
	webhookTimeout                      time.Duration
	claimTTL                            time.Duration
	maxHold                             time.Duration
	stuckAfter                          time.Duration
	reclaim                             bool
	freezes                             []string
	freezeFile                          string
	freezeTimeZone                      string
	notifyURL                           string
	notifyURLFile                       string
	notifyFormat                        string
	notifyKeyFile                       string
	notifyChannels, notifyChannelFormat []string
	linksURL, linksKey                  string
	webhookKeyFile                      string
	webhookAllow                        []string
	pushgatewayURL                      string
	clusterName                         string
	shardIndex                          int
	shardCount                          int
	chunkSize                           int64
	configFrom                          string
	argoCDNamespace                     string
	// own is the namespace nsman runs in: kube.ownNamespace(), or with
	// --dry-run from outside the cluster, that of the CronJob --config-from
	// finds (see run).
	own string
}

func newSweepCommand() *cobra.Command { return newSweepOptions().command() }

func newSweepOptions() *sweepOptions {
	// No namespace is trusted by default but the one nsman runs in (see
	// namespaceTrust): a default naming a namespace that may not exist
	// would trust whoever creates it. namespace-manager, where deploy/ and
	// the original operator install, stays protected: protecting opens
	// nothing. The protected floor (sweep.ProtectedFloor and nsman's own
	// namespace) is not a default: namespaceTrust adds it whatever the flag
	// says.
	return &sweepOptions{
		protectedNamespaces: []string{"default", "namespace-manager"},
	}
}

func (o *sweepOptions) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "sweep",
		Short: "Evaluate every NamespaceManager once and apply the actions that are due",
		Long: `Lists the NamespaceManagers, evaluates each one's policies in order, applies
the first that holds (DELETE, SCALE_DOWN, SLEEP or WEBHOOK), sets
spec.deactivated and exits. Run it from a CronJob, a CI step, or with
--dry-run from a laptop, which takes the flags of nsman's CronJob in the
cluster (--config-from).

Exit status: 0 when every attempted action succeeded, 1 when any manager
failed, 2 on a usage or configuration error.`,
		Example: `  nsman sweep --dry-run
  nsman sweep --dry-run --at 2026-12-24T18:00:00Z -o wide
  nsman sweep --dry-run --as system:serviceaccount:namespace-manager:nsman
  nsman sweep -n team-a -l env=preview --max-actions 10
  nsman sweep --dry-run --state planned -o name
  nsman sweep -o json | jq '.managers[] | select(.state == "failed")'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c) },
	}
	fs := c.Flags()
	o.addDecisionFlags(fs)
	fs.StringVarP(&o.output, "output", "o", "text", "report format: text, wide (DUE AT and OWNER columns besides), json, yaml or name (a line per entry: its manager, or the namespace of a rule's pair)")
	fs.StringSliceVar(&o.states, "state", nil, "print only the entries in these states, comma-separated (fired,failed); the summary still counts them all: "+printer.StateList)
	fs.BoolVar(&o.noColor, "no-color", false, "print the states of the text report without colour, even on a terminal (as does NO_COLOR, and output that is not a terminal)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "make no change at all; print what would happen")
	fs.StringVar(&o.at, "at", "", "with --dry-run, evaluate at this RFC 3339 time instead of now")
	fs.IntVar(&o.maxActions, "max-actions", 0, "act on at most this many managers or rule namespaces per sweep, shared round-robin across the namespaces acted on; the rest wait for the next (0: no limit)")
	fs.IntVar(&o.concurrency, "concurrency", sweep.DefaultConcurrency, "managers handled at once")
	durationVar(fs, &o.webhookTimeout, "webhook-timeout", 10*time.Second, "timeout of one webhook attempt")
	fs.BoolVar(&o.reclaim, "reclaim", true, "tell what each DELETE and SCALE_DOWN frees (CPU and memory requested by the pods that go, storage requested by the PersistentVolumeClaims, LoadBalancer Services), read before a DELETE")
	fs.StringVar(&o.webhookKeyFile, "webhook-signing-key-file", "", "file with the key that signs webhook requests (HMAC-SHA256)")
	fs.StringSliceVar(&o.webhookAllow, "webhook-allow", nil, "send webhooks only to these receivers: host names, *.domain suffixes, CIDRs of the addresses dialled (default: any receiver the deny list allows)")
	fs.StringVar(&o.notifyURL, "notify-url", "", "after every action that fired or failed (not in a dry run), POST a notification here, delivered as WEBHOOK actions are (timeout, retries, address policy, --webhook-allow, signature); the URL is a credential that this flag shows to anyone who can see the process or the pod spec: in a cluster, use --notify-url-file")
	fs.StringVar(&o.notifyURLFile, "notify-url-file", "", "as --notify-url, with the URL read from this file (once, at start; surrounding white space trimmed), e.g. a mounted Secret's key")
	fs.StringVar(&o.notifyKeyFile, "notify-signing-key-file", "", "file with the key that signs notifications (HMAC-SHA256) in place of --webhook-signing-key-file's (default: notifications are signed as WEBHOOK requests are)")
	fs.StringVar(&o.notifyFormat, "notify-format", tell.DefaultFormat, tell.FormatHelp())
	fs.StringArrayVar(&o.notifyChannels, "notify-channel", nil, "`NAME=FILE` (repeatable): a channel of the platform's, its URL read from FILE as --notify-url-file's; a namespace or manager annotated "+status.NotifyChannelAnnotation+": NAME has its notifications sent there instead of the default (an unknown name: to the default, with a warning)")
	fs.StringArrayVar(&o.notifyChannelFormat, "notify-channel-format", nil, "`NAME=FMT` (repeatable): the --notify-format of channel NAME, FMT (default: --notify-format's)")
	fs.StringVar(&o.linksURL, "links-url", "", "with --links-signing-key-file, each warning (warnBefore) and SLEEP notification carries signed links to nsman serve at this URL: extend by 1 day or 1 week, wake for 2 hours")
	fs.StringVar(&o.linksKey, "links-signing-key-file", "", "file with the key that signs the links of --links-url (HMAC-SHA256), which nsman serve holds too")
	fs.StringVar(&o.pushgatewayURL, "pushgateway-url", "", "push the sweep's metrics to this Prometheus Pushgateway at the end of each sweep")
	fs.StringVar(&o.clusterName, "cluster-name", "", "with --pushgateway-url, push the metrics under the grouping label cluster=NAME, which every series pushed then carries: one Pushgateway and one dashboard for the clusters of a fleet (default: no cluster label)")
	fs.IntVar(&o.shardCount, "shard-count", 1, "split the managers among this many sweeps run side by side, by a hash of their UID")
	fs.IntVar(&o.shardIndex, "shard-index", 0, "the shard this sweep handles, from 0 to --shard-count - 1 (default: $"+jobIndexEnv+" whenever it is set, whatever --shard-count, else 0)")
	complete.Choices(c, "output", printer.Formats...)
	return c
}

// addDecisionFlags adds the flags that change what a sweep decides, which
// nsman due takes as nsman sweep does.
func (o *sweepOptions) addDecisionFlags(fs *pflag.FlagSet) {
	o.kube.addFlags(fs)
	o.log.addFlags(fs)
	o.prom.AddFlags(fs)
	fs.StringVarP(&o.namespace, "namespace", "n", "", "only managers in this namespace (default: all namespaces)")
	fs.StringVarP(&o.selector, "selector", "l", "", "only managers matching this label selector")
	fs.StringSliceVar(&o.trustedNamespaces, "trusted-namespaces", o.trustedNamespaces, "namespaces whose managers may target other namespaces, and where rules may live: exactly those listed, the namespace nsman runs in included only if listed (unset: the namespace nsman runs in, $POD_NAMESPACE or on the in-cluster config its ServiceAccount's, or with --dry-run from outside the cluster its CronJob's; none when it is not known). A listed namespace that does not exist is reported by every sweep: whoever creates it gets trusted managers")
	fs.StringSliceVar(&o.protectedNamespaces, "protected-namespaces", o.protectedNamespaces, "namespaces never deleted, scaled down or notified about, in addition to kube-system, kube-public, kube-node-lease and the namespace nsman runs in, which always are; the list given replaces only the default")
	durationVar(fs, &o.maxHold, "max-hold", decide.DefaultMaxHold, "a hold (annotation "+status.HoldAnnotation+") or a wake ("+status.WakeAnnotation+") ending further ahead than this is ignored and reported")
	durationVar(fs, &o.claimTTL, "claim-ttl", sweep.DefaultClaimTTL, "how long a claim holds a manager: an action not done by then (less 5s) is given up, and a later sweep may complete the claim of a sweep that died (at least 10s)")
	durationVar(fs, &o.stuckAfter, "stuck-after", sweep.DefaultStuckAfter, "a namespace a manager deleted or aims at, or a DELETE rule matches, that is still Terminating this long after its deletion is reported stuck, with why")
	fs.StringArrayVar(&o.freezes, "freeze", nil, "START/END: nothing acts from START to END; what is due waits until END (repeatable; each an RFC 3339 time, or a date YYYY-MM-DD in --freeze-time-zone: a START date is the start of that day, an END date its end)")
	fs.StringVar(&o.freezeFile, "freeze-file", "", "file of freezes, as --freeze, one START/END a line, # comments (a holiday calendar), read at start")
	fs.StringVar(&o.freezeTimeZone, "freeze-time-zone", "UTC", "the IANA time zone of the dates in --freeze and --freeze-file")
	fs.Int64Var(&o.chunkSize, "chunk-size", sweep.DefaultPageSize, "objects per list request (managers, namespaces, pods), as kubectl's --chunk-size")
	fs.StringVar(&o.argoCDNamespace, "argocd-namespace", sweep.DefaultArgoCDNamespace, argoCDNamespaceHelp)
	fs.StringVar(&o.configFrom, "config-from", configFromAuto, "with --dry-run from outside the cluster (no $POD_NAMESPACE, not the in-cluster config): take the namespace and the sweep flags of nsman's CronJob in the cluster for those not given here, as it sees them: auto (the one labelled "+installedSelector+", if any), NAMESPACE/NAME, or none")
}

// argoCDNamespaceHelp is --argocd-namespace's help, of nsman sweep and
// nsman explain alike.
const argoCDNamespaceHelp = "the namespace Argo CD runs in, for OWNER_GONE: an argocd.argoproj.io/tracking-id annotation's app name alone names an Application there (NS_NAME names the Application NAME in NS), and only Applications there own the namespaces they create (CreateNamespace=true)"

// config turns the flags into a sweep.Config (see namespaceTrust for the
// namespaces it trusts and protects).
func (o *sweepOptions) config(flags *pflag.FlagSet) (sweep.Config, error) {
	trusted, protected := o.namespaceTrust(flags)
	cfg := sweep.Config{
		Namespace:           o.namespace,
		LabelSelector:       o.selector,
		DryRun:              o.dryRun,
		MaxActions:          o.maxActions,
		Concurrency:         o.concurrency,
		TrustedNamespaces:   trusted,
		ProtectedNamespaces: protected,
		SweepID:             sweepID(),
		ClaimTTL:            o.claimTTL,
		MaxHold:             o.maxHold,
		StuckAfter:          o.stuckAfter,
		SkipReclaim:         !o.reclaim,
		NotifyFormat:        o.notifyFormat,
		Version:             Version(),
		ShardIndex:          o.shardIndex,
		ShardCount:          o.shardCount,
		PageSize:            o.chunkSize,
		ArgoCDNamespace:     o.argoCDNamespace,
	}
	if o.shardCount < 1 {
		return cfg, errors.New("--shard-count must be at least 1")
	}
	var err error
	if cfg.Traffic.Querier, err = o.prom.Querier(traffic.Names()); err != nil {
		return cfg, err
	}
	cfg.Traffic.Match = o.prom.Match
	if cfg.ShardIndex, err = o.shardIndexOf(flags); err != nil {
		return cfg, err
	}
	if o.at != "" {
		if cfg.At, err = time.Parse(time.RFC3339, o.at); err != nil {
			return cfg, fmt.Errorf("--at %q: want an RFC 3339 time such as 2026-01-02T09:00:00Z", o.at)
		}
	}
	if cfg.Freezes, err = decide.LoadFreezes(o.freezes, o.freezeFile, o.freezeTimeZone); err != nil {
		return cfg, err
	}
	if err := o.printFlags(); err != nil {
		return cfg, err
	}
	switch {
	case o.concurrency < 1:
		return cfg, errors.New("--concurrency must be at least 1")
	case o.chunkSize < 1:
		return cfg, errors.New("--chunk-size must be at least 1")
	case !utf8.ValidString(o.clusterName):
		return cfg, errors.New("--cluster-name is not valid UTF-8, which a Prometheus label value must be")
	}
	if err := o.notify(&cfg); err != nil {
		return cfg, err
	}
	if cfg.Links, err = tell.LinkerFromFlags(o.linksURL, o.linksKey); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// printFlags checks -o and reads --state into o.printed.
func (o *sweepOptions) printFlags() (err error) {
	if o.printed, err = printer.ParseStates(o.states); err != nil {
		return err
	}
	return printer.CheckFormat(o.output, printer.Formats)
}

// namespaceTrust returns the namespaces a sweep trusts and those it
// protects. The namespace nsman runs in is always protected, with
// sweep.ProtectedFloor: a flag naming other namespaces must not leave
// nsman's own CronJob and managers open. It is the only one trusted while
// --trusted-namespaces is unset (none when it is not known): a list of
// trusted namespaces given is the whole list, so that trust never grows
// beyond what was written.
func (o *sweepOptions) namespaceTrust(flags *pflag.FlagSet) (trusted, protected []string) {
	trusted, protected = o.trustedNamespaces, o.protectedNamespaces
	if !flags.Changed("trusted-namespaces") {
		trusted = []string{}
	}
	if own := cmp.Or(o.own, o.kube.ownNamespace()); own != "" {
		if !flags.Changed("trusted-namespaces") {
			trusted = []string{own}
		}
		protected = append(slices.Clone(protected), own)
	}
	return trusted, sweep.WithProtectedFloor(protected)
}

// shardIndexOf returns the shard this sweep handles: --shard-index, or the
// index of an Indexed Job's pod ($JOB_COMPLETION_INDEX) when the flag
// is not given, so that one Job's pods share the managers out.
func (o *sweepOptions) shardIndexOf(flags *pflag.FlagSet) (int, error) {
	v, set := os.LookupEnv(jobIndexEnv)
	if !set || flags.Changed("shard-index") {
		return o.shardIndex, nil
	}
	i, err := strconv.Atoi(v)
	switch {
	case err != nil || i < 0:
		return 0, fmt.Errorf("$%s=%q: want the index of an Indexed Job's pod, or --shard-index", jobIndexEnv, v)
	case i >= o.shardCount:
		return 0, fmt.Errorf("$%s is %d but --shard-count is %d: set --shard-count to the Indexed Job's completions", jobIndexEnv, i, o.shardCount)
	}
	return i, nil
}

// notify reads the notification flags into cfg: the URL and key
// (notifyConfig), and the channels (tell.ParseChannels).
func (o *sweepOptions) notify(cfg *sweep.Config) (err error) {
	if cfg.NotifyURL, cfg.NotifySigningKey, err = o.notifyConfig(); err != nil {
		return err
	}
	cfg.NotifyChannels, err = tell.ParseChannels(o.notifyChannels, o.notifyChannelFormat)
	return err
}

// notifyConfig reads the notification URL, from --notify-url or
// --notify-url-file, and the key of --notify-signing-key-file. The URL is
// a credential: no error shows more of it than its scheme and host
// (tell.RedactURL), and one about the file none of what it holds; the
// file is read as --notify-channel's are, bounded (tell.ReadURLFile).
func (o *sweepOptions) notifyConfig() (string, []byte, error) {
	rawURL := o.notifyURL
	switch {
	case o.notifyURL != "" && o.notifyURLFile != "":
		return "", nil, errors.New("--notify-url and --notify-url-file: give one, not both")
	case o.notifyURL != "":
		if !tell.Notifiable(o.notifyURL) {
			return "", nil, fmt.Errorf("--notify-url %s: want an absolute http or https URL", tell.RedactURL(o.notifyURL))
		}
	case o.notifyURLFile != "":
		var err error
		if rawURL, err = tell.ReadURLFile("--notify-url-file", o.notifyURLFile); err != nil {
			return "", nil, err
		}
	}
	if o.notifyKeyFile == "" {
		return rawURL, nil, nil
	}
	if rawURL == "" && len(o.notifyChannels) == 0 {
		return "", nil, errors.New("--notify-signing-key-file needs --notify-url, --notify-url-file or --notify-channel")
	}
	key, err := os.ReadFile(o.notifyKeyFile)
	if err != nil {
		return "", nil, fmt.Errorf("--notify-signing-key-file: %w", err)
	}
	if key = []byte(strings.TrimSpace(string(key))); len(key) == 0 {
		return "", nil, fmt.Errorf("--notify-signing-key-file %s is empty", o.notifyKeyFile)
	}
	return rawURL, key, nil
}

func (o *sweepOptions) webhookOptions() (webhook.Options, error) {
	opts := webhook.Options{Timeout: o.webhookTimeout, UserAgent: "nsman/" + Version(), Workers: o.concurrency}
	if o.webhookTimeout <= 0 {
		return opts, errors.New("--webhook-timeout must be positive")
	}
	if o.webhookKeyFile != "" {
		key, err := os.ReadFile(o.webhookKeyFile)
		if err != nil {
			return opts, fmt.Errorf("--webhook-signing-key-file: %w", err)
		}
		if opts.SigningKey = []byte(strings.TrimSpace(string(key))); len(opts.SigningKey) == 0 {
			return opts, fmt.Errorf("--webhook-signing-key-file %s is empty", o.webhookKeyFile)
		}
	}
	allow, err := webhook.ParseAllowList(o.webhookAllow)
	if err != nil {
		return opts, fmt.Errorf("--webhook-allow: %w", err)
	}
	opts.Allow = allow
	return opts, nil
}

func (o *sweepOptions) run(c *cobra.Command) error {
	log, err := o.log.logger(c.ErrOrStderr())
	if err != nil {
		return err
	}
	cfg, err := o.config(c.Flags())
	if err != nil {
		return usageError{err}
	}
	if _, err := o.webhookOptions(); err != nil {
		return usageError{err}
	}
	clients, err := o.kube.clients()
	if err != nil {
		return err
	}
	if cfg, err = o.asInstalled(c.Context(), c.Flags(), clients.Kube, cfg, log); err != nil {
		return err
	}
	if len(cfg.TrustedNamespaces) == 0 && !c.Flags().Changed("trusted-namespaces") {
		log.Warn("no namespace is trusted: the namespace nsman runs in is not known (no $POD_NAMESPACE, no in-cluster config, and no CronJob of nsman's taken with --config-from); managers may target only their own namespace and rules are refused (--trusted-namespaces names the trusted ones)")
	}
	// Read again: --webhook-allow may be the installed CronJob's.
	webhookOpts, err := o.webhookOptions()
	if err != nil {
		return usageError{err}
	}
	sweeper, err := sweep.New(cfg, clients, webhook.NewSender(webhookOpts), log)
	if err != nil {
		return usageError{err}
	}
	// With logs as short lines (--log-format not given) on a terminal.
	stop := console.Progress(c.ErrOrStderr(), o.log.format == "", "sweeping", func() string {
		return fmt.Sprintf("%d API requests", printer.SumRequests(clients.Observer.Requests()))
	})
	rep, err := sweeper.Run(c.Context())
	stop()
	interrupted := errors.Is(err, sweep.ErrInterrupted)
	if err != nil && !interrupted {
		// The sweep could not run at all: no cluster, or no CRD.
		return usageError{err}
	}
	printed := printer.Options{Format: o.output, States: o.printed, Color: console.Color(c.OutOrStdout(), o.noColor)}
	if err := printer.Print(c.OutOrStdout(), rep, printed); err != nil {
		return err
	}
	if o.pushgatewayURL != "" {
		o.pushMetrics(c.Context(), rep, interrupted, log)
	}
	switch {
	case interrupted:
		return err
	case rep.Summary.ListError != "":
		return fmt.Errorf("%s; %d manager(s) failed", rep.Summary.ListError, rep.Summary.States[report.StateFailed])
	case rep.Failed():
		return fmt.Errorf("%d manager(s) failed", rep.Summary.States[report.StateFailed])
	}
	return nil
}

// asInstalled returns the configuration of a dry run from outside the
// cluster as the installed CronJob would sweep (see findInstallation and
// adopt), saying which; else cfg as it is. The CronJob is looked for as
// the caller's own user (kubeOptions.ownClient).
func (o *sweepOptions) asInstalled(ctx context.Context, flags *pflag.FlagSet, kube kubernetes.Interface, cfg sweep.Config, log *slog.Logger) (sweep.Config, error) {
	explicit := o.configFrom != configFromAuto && o.configFrom != configFromNone
	switch {
	case explicit && (!o.dryRun || o.kube.ownNamespace() != ""):
		return cfg, usageError{errNotADryRun}
	case !o.dryRun || o.kube.ownNamespace() != "":
		return cfg, nil
	case o.configFrom == configFromNone:
		log.Info("--config-from none: this command's flags alone")
		return cfg, nil
	}
	inst, err := findInstallation(ctx, o.kube.ownClient(kube), o.configFrom)
	switch {
	case err != nil && explicit:
		return cfg, usageError{err}
	case errors.As(err, new(usageError)):
		return cfg, err
	case err != nil:
		log.Warn("dry run with this command's flags alone: nsman's CronJob could not be looked for (--config-from none skips the lookup)", "error", err.Error())
		return cfg, nil
	case inst == nil:
		log.Info("dry run with this command's flags alone: no nsman CronJob in the cluster (labelled " + installedSelector + ")")
		return cfg, nil
	}
	taken, err := o.adopt(flags, inst)
	if err != nil {
		return cfg, usageError{err}
	}
	if cfg, err = o.config(flags); err != nil {
		return cfg, usageError{fmt.Errorf("as %s: %w", inst, err)}
	}
	log.Info("dry run as "+inst.String()+" sweeps (--config-from none for this command's flags alone)",
		"namespace", inst.namespace, "flags", strings.Join(taken, " "))
	return cfg, nil
}

// pushMetrics pushes a sweep's metrics to --pushgateway-url, within
// pushTimeout even when the sweep was interrupted. A sweep's work is done
// whether or not its metrics arrive: a failed push is logged, and does not
// change the exit code. A dry run is no successful sweep: it acted on
// nothing.
func (o *sweepOptions) pushMetrics(ctx context.Context, rep report.Report, interrupted bool, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
	err := metrics.PushMetrics(ctx, o.pushgatewayURL, metrics.DefaultMetricsJob, o.clusterName, rep, !rep.Failed() && !rep.Summary.DryRun && !interrupted, nil)
	cancel()
	if err == nil {
		return
	}
	// The URL may carry a credential (a user, a token in its path), as
	// --notify-url's does: logged as notifications log theirs.
	shown, msg := tell.RedactURL(o.pushgatewayURL), tell.RedactError(o.pushgatewayURL, "the metrics push", err)
	if errors.Is(err, metrics.ErrCountersLeftOut) {
		log.Warn("metrics pushed without the reclaimed totals", "url", shown, "error", msg)
		return
	}
	log.Error("metrics not pushed", "url", shown, "error", msg)
}

// pushTimeout bounds the metrics push, so that a hanging Pushgateway cannot
// hold a CronJob's pod.
const pushTimeout = 10 * time.Second

// jobIndexEnv holds the index of an Indexed Job's pod: the shard, when
// --shard-index is not given.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// sweepID names one sweep in the claims it writes.
func sweepID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%s", host, hex.EncodeToString(b))
}
