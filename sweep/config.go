package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/internal/usage"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// Config is a typed sweep configuration; cmd builds it from flags.
type Config struct {
	// Namespace limits the sweep to managers in one namespace; empty is all.
	Namespace string
	// LabelSelector limits the sweep to matching managers.
	LabelSelector string
	// DryRun makes no mutating request at all and reports the plan.
	DryRun bool
	// At, with DryRun, evaluates at this time instead of the server's now.
	At time.Time
	// MaxActions caps a sweep's actions, deferring the rest (0: no cap).
	MaxActions int
	// Concurrency is the number of managers handled at once.
	Concurrency int
	// TrustedNamespaces hold managers that may target any namespace; a
	// manager elsewhere may only target its own namespace.
	TrustedNamespaces []string
	// ProtectedNamespaces are never acted on; New adds ProtectedFloor.
	ProtectedNamespaces []string
	// PageSize is the number of managers per list request.
	PageSize int64
	// ClaimTTL is how long a claim holds: the claiming sweep gives up an
	// action it has not finished by then, and a later sweep may complete it.
	ClaimTTL time.Duration
	// SweepID names this sweep in claims.
	SweepID string
	// ShardIndex and ShardCount split the managers among ShardCount
	// sweeps run side by side: this one handles those whose
	// ShardOf(UID, ShardCount) is ShardIndex. A ShardCount of 0 or 1 means
	// one sweep handles every manager.
	ShardIndex int
	ShardCount int
	// InterruptGrace is how long actions under way may go on after the
	// sweep's context is cancelled; then they are cut off, and their claims,
	// if they made any, released. It must stay below the pod's termination grace period.
	InterruptGrace time.Duration
	// NotifyURL, when set, receives a notification after every action
	// that fired or failed (not in a dry run), in NotifyFormat (one of
	// tell.FormatNames, "" for tell.DefaultFormat), delivered as WEBHOOK
	// actions are, NotifyChannels those a namespace or manager picks (see
	// tell.Notifier.Route). Each URL is a credential: never shown whole.
	NotifyURL      string
	NotifyFormat   string
	NotifyChannels []tell.Channel
	// NotifySigningKey, when set, signs notifications in place of the
	// sender's key: every WEBHOOK receiver that verifies nsman's requests
	// holds that key, and could sign a notification with it. Empty:
	// notifications are signed as WEBHOOK actions are (with the sender's
	// key, if it has one), as before the field existed.
	NotifySigningKey []byte
	// Links (nil: none) puts signed links in each SLEEP's notification.
	Links *tell.Linker
	// Version is nsman's, which notifications carry.
	Version string
	// MaxHold is how far ahead of now a hold (HoldAnnotation) may end; one
	// further ahead is ignored and reported. Zero means DefaultMaxHold.
	MaxHold time.Duration
	// StuckAfter is how long after its deletionTimestamp a namespace still
	// Terminating is stuck: its entry, the manager's or rule's status and
	// a Warning Event say why. Zero means DefaultStuckAfter.
	StuckAfter time.Duration
	// SkipReclaim: a DELETE or SCALE_DOWN is not told what it frees, and a
	// DELETE reads nothing before it (--reclaim=false).
	SkipReclaim bool
	// Freezes are times in which nothing acts (--freeze, --freeze-file).
	Freezes []decide.Freeze
	// ArgoCDNamespace is the namespace Argo CD runs in
	// (--argocd-namespace): where an Application that a tracking id names
	// by app name alone lives, and the Applications that own the namespaces
	// they create. Empty means DefaultArgoCDNamespace.
	ArgoCDNamespace string
	// Traffic: IDLE's Prometheus (--prometheus-url), presets' pins (--traffic-match).
	Traffic usage.TrafficConfig
}

// ProtectedFloor is the namespaces New always protects, whatever
// Config.ProtectedNamespaces says: the cluster's own. It returns a new slice
// each time, so that no caller can shrink the floor.
func ProtectedFloor() []string {
	return []string{"kube-system", "kube-public", "kube-node-lease"}
}

// WithProtectedFloor returns ProtectedFloor followed by the namespaces of
// protected it lacks, in order and once each; protected is not changed.
func WithProtectedFloor(protected []string) []string {
	all := ProtectedFloor()
	for _, ns := range protected {
		if !slices.Contains(all, ns) {
			all = append(all, ns)
		}
	}
	return all
}

// Defaults for the zero values of Config.
const (
	DefaultConcurrency = 16
	DefaultPageSize    = 500
	DefaultClaimTTL    = time.Minute
	// MinClaimTTL leaves an action at least 5s within its claim.
	MinClaimTTL = 10 * time.Second
	// DefaultInterruptGrace leaves room within a CronJob pod's default
	// 30s termination grace period.
	DefaultInterruptGrace = 20 * time.Second
	// DefaultStuckAfter gives the namespace controller time to empty a
	// namespace of its pods (30s of grace each) and the rest.
	DefaultStuckAfter = 10 * time.Minute
	// DefaultArgoCDNamespace is where Argo CD's install puts it.
	DefaultArgoCDNamespace = "argocd"
)

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case !c.At.IsZero() && !c.DryRun:
		return fmt.Errorf("--at needs --dry-run")
	case c.MaxActions < 0:
		return fmt.Errorf("--max-actions must not be negative")
	case c.Concurrency < 0:
		return fmt.Errorf("--concurrency must not be negative")
	case c.ClaimTTL != 0 && c.ClaimTTL < MinClaimTTL:
		return fmt.Errorf("--claim-ttl must be at least %s", MinClaimTTL)
	case tell.ValidateNotify(c.NotifyFormat, c.NotifyChannels) != nil:
		return tell.ValidateNotify(c.NotifyFormat, c.NotifyChannels)
	case c.MaxHold < 0:
		return fmt.Errorf("--max-hold must not be negative")
	case c.StuckAfter < 0:
		return fmt.Errorf("--stuck-after must not be negative")
	case slices.ContainsFunc(c.Freezes, func(f decide.Freeze) bool { return !f.End.After(f.Start) }):
		return fmt.Errorf("a freeze ends before it starts")
	case c.ShardCount < 0:
		return fmt.Errorf("--shard-count must not be negative")
	case c.ArgoCDNamespace != "" && len(validation.IsDNS1123Label(c.ArgoCDNamespace)) > 0:
		return fmt.Errorf("--argocd-namespace %q is not a namespace's name", c.ArgoCDNamespace)
	case c.ShardIndex < 0 || c.ShardIndex >= max(c.ShardCount, 1):
		return fmt.Errorf("--shard-index %d is not a shard of --shard-count %d: want 0 to %d", c.ShardIndex, max(c.ShardCount, 1), max(c.ShardCount, 1)-1)
	}
	return nil
}

// Sweeper runs sweeps.
type Sweeper struct {
	cfg     Config
	clients cluster.Clients
	log     *slog.Logger
	// writer is where a dry run differs (write.New); notifier is nil
	// without Config.NotifyURL, NotifyChannels or actions that are done.
	writer   write.Writer
	notifier *tell.Notifier
	// env is what the records of managers and rules' pairs are read and
	// written with.
	env record.Env
}

// New returns a Sweeper. sender delivers WEBHOOK actions and notifications.
func New(cfg Config, clients cluster.Clients, sender *webhook.Sender, log *slog.Logger) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Concurrency, cfg.PageSize = cmp.Or(cfg.Concurrency, DefaultConcurrency), cmp.Or(cfg.PageSize, DefaultPageSize)
	cfg.ClaimTTL, cfg.InterruptGrace = cmp.Or(cfg.ClaimTTL, DefaultClaimTTL), cmp.Or(cfg.InterruptGrace, DefaultInterruptGrace)
	cfg.MaxHold, cfg.StuckAfter = cmp.Or(cfg.MaxHold, decide.DefaultMaxHold), cmp.Or(cfg.StuckAfter, DefaultStuckAfter)
	cfg.ProtectedNamespaces = WithProtectedFloor(cfg.ProtectedNamespaces)
	cfg.ArgoCDNamespace = cmp.Or(cfg.ArgoCDNamespace, DefaultArgoCDNamespace)
	s := &Sweeper{cfg: cfg, clients: clients, log: log, writer: write.New(clients.Kube, clients.Dynamic, clients.Managers, sender, cfg.DryRun)}
	s.env = record.Env{Writer: s.writer, Reads: s.reads(), Clock: s.clock, ClaimTTL: cfg.ClaimTTL}
	if (cfg.NotifyURL != "" || len(cfg.NotifyChannels) > 0) && s.writer.Done() == report.StateFired {
		if sender == nil {
			return nil, errors.New("notifications need a webhook sender")
		}
		notifySender := sender
		if len(cfg.NotifySigningKey) > 0 {
			notifySender = sender.WithSigningKey(cfg.NotifySigningKey)
		}
		s.notifier = tell.NewNotifier(cfg.NotifyURL, cfg.NotifyFormat, notifySender).WithChannels(cfg.NotifyChannels, notifySender)
	}
	return s, nil
}

// reads is the reader of s's clients and configuration.
func (s *Sweeper) reads() cluster.Reader {
	return cluster.Reader{Clients: s.clients, PageSize: s.cfg.PageSize, Namespace: s.cfg.Namespace, LabelSelector: s.cfg.LabelSelector, Log: s.log}
}

// probe gives sweep r what it reads of namespaces: one of each probe.
func (s *Sweeper) probe(r *sweepRun) {
	reads := probe.Reads{Reader: s.reads(), ClaimTTL: s.cfg.ClaimTTL}
	r.pods, r.activity = probe.NewPods(reads), probe.NewActivity(reads)
	r.reclaim, r.stuck = reclaim.NewReclaim(reads), probe.NewStuck(reads, s.cfg.StuckAfter)
	r.kinds = &probe.Kinds{}
	r.awake = probe.NewAwake(reads, r.kinds)
	r.owners = probe.NewOwners(reads, s.cfg.ArgoCDNamespace)
	r.traffic = usage.NewTraffic(s.cfg.Traffic, func(ctx context.Context) (map[string]cluster.Namespace, error) { return s.namespaces(ctx, r) })
}

// begin sets sweep r's time, from its first page on, and what evaluates
// and carries out its subjects at that time.
func (s *Sweeper) begin(r *sweepRun) {
	r.now = s.now()
	r.frozenUntil, r.frozen = decide.FrozenUntil(s.cfg.Freezes, r.now)
	r.exec = &execute.Executor{Writer: s.writer, Reads: s.reads(), Notifier: s.notifier, Links: s.cfg.Links, Reclaim: r.reclaim, Log: s.log,
		Now: r.now, Clock: s.clock, Frozen: r.frozen, FrozenUntil: r.frozenUntil, Stop: r.stop,
		SweepID: s.cfg.SweepID, Version: s.cfg.Version, ClaimTTL: s.cfg.ClaimTTL, MaxActions: s.cfg.MaxActions,
		Trusted: s.cfg.TrustedNamespaces, SkipReclaim: s.cfg.SkipReclaim, Places: r.share, Kinds: r.kinds}
	r.eval = &decide.Evaluator{Now: r.now, Clock: s.clock, Frozen: r.frozen, FrozenUntil: r.frozenUntil,
		ClaimTTL: s.cfg.ClaimTTL, MaxHold: s.cfg.MaxHold, MaxActions: s.cfg.MaxActions,
		Trusted: s.cfg.TrustedNamespaces, Protected: s.cfg.ProtectedNamespaces,
		Namespaces: func(ctx context.Context) (map[string]cluster.Namespace, error) { return s.namespaces(ctx, r) },
		Activity:   r.activity, Stuck: r.stuck, Owners: r.owners, Budget: r.share, Awake: r.awake, Traffic: r.traffic}
}

// ours reports whether the object of uid (a manager, a rule's pair, or a
// namespace whose stale records a shard removes) is of this sweep's shard.
func (s *Sweeper) ours(uid types.UID) bool {
	return cluster.ShardOf(uid, s.cfg.ShardCount) == s.cfg.ShardIndex
}

// managerRecord is manager l's record, as listed in sweep r.
func (s *Sweeper) managerRecord(r *sweepRun, l listpage.Listed) *record.Manager {
	return &record.Manager{Env: s.env, At: r.status, Obj: l.Obj, Now: r.now, Stored: r.status.Read(l),
		Events: s.eventsOn(l.Obj, r.now)}
}

// eventsOn writes the Events on manager (or rule) obj, at now.
func (s *Sweeper) eventsOn(obj *unstructured.Unstructured, now time.Time) tell.ManagerEvents {
	return tell.ManagerEvents{Writer: s.writer, Log: s.log, SweepID: s.cfg.SweepID, Obj: obj, Now: now}
}
