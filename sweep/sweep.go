package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"

	"github.com/nsman/nsman/policy"
)

// ErrInterrupted means the sweep was stopped (SIGTERM, say) before it got to
// every manager; the Report covers what it did.
var ErrInterrupted = errors.New("sweep interrupted")

// ErrNotInstalled means the API server does not serve NamespaceManagers.
var ErrNotInstalled = errors.New("the NamespaceManager CRD (namespacemanagers.k8s.consol.de) is not installed")

// sweepRun is the state of one Run.
type sweepRun struct {
	now     time.Time
	store   stateStore
	actions atomic.Int64

	nsOnce sync.Once
	nsErr  error
	ns     map[string]namespaceInfo

	// podChecks counts pods checks; after PodIndexAfter of them, pods
	// answers come from one cluster-wide list.
	podChecks atomic.Int64
	pods      podIndex

	mu      sync.Mutex
	entries []Entry
}

type namespaceInfo struct {
	uid         types.UID
	created     time.Time
	terminating bool
}

// Run performs one sweep. Per-manager failures are reported in the Report
// and never stop the sweep. The error is for a sweep that could not run at
// all (no API server, CRD not installed), or ErrInterrupted, with the Report
// of what it did, when ctx was cancelled before it got to every manager.
func (s *Sweeper) Run(ctx context.Context) (Report, error) {
	began := time.Now()
	store, err := s.stateStore()
	if err != nil {
		return Report{}, err
	}
	r := &sweepRun{store: store}
	// Work already started outlives an interrupt by InterruptGrace, so that
	// an action under way finishes and is recorded rather than being cut
	// off with its claim held; nothing new starts once ctx is done.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(s.cfg.InterruptGrace, cancelWork) })
	defer stopGrace()

	jobs := make(chan listed)
	var workers sync.WaitGroup
	for range s.cfg.Concurrency {
		workers.Go(func() {
			for m := range jobs {
				if ctx.Err() != nil {
					r.add(notReached(m.obj))
					continue
				}
				e := s.handle(work, r, m)
				s.logDecision(work, e)
				r.add(e)
			}
		})
	}
	first := true
	skipped := 0
	err = s.eachManager(ctx, func(m listed) {
		if first {
			r.now = s.now()
			first = false
		}
		if ShardOf(m.obj.GetUID(), s.cfg.ShardCount) != s.cfg.ShardIndex {
			skipped++
			return
		}
		if ctx.Err() == nil {
			select {
			case jobs <- m:
				return
			case <-ctx.Done():
			}
		}
		// Interrupted: what is listed already is reported; the next page is
		// not fetched.
		r.add(notReached(m.obj))
	})
	close(jobs)
	workers.Wait()
	interrupted := ctx.Err()
	if err != nil && interrupted == nil {
		if apierrors.IsNotFound(err) {
			return Report{}, ErrNotInstalled
		}
		return Report{}, fmt.Errorf("list NamespaceManagers: %w", err)
	}
	if first {
		r.now = s.now()
	}

	slices.SortFunc(r.entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	report := Report{Version: ReportVersion, Entries: r.entries, Summary: Summary{
		Now:             r.now.UTC(),
		DryRun:          s.cfg.DryRun,
		Managers:        len(r.entries),
		States:          map[State]int{},
		Requests:        s.clients.Observer.Requests(),
		DurationSeconds: time.Since(began).Seconds(),
	}}
	if s.cfg.ShardCount > 1 {
		report.Summary.Shard = &Shard{Index: s.cfg.ShardIndex, Count: s.cfg.ShardCount, Skipped: skipped}
	}
	for _, e := range r.entries {
		report.Summary.States[e.State]++
	}
	if interrupted != nil {
		return report, fmt.Errorf("%w: %w", ErrInterrupted, interrupted)
	}
	return report, nil
}

func (r *sweepRun) add(e Entry) {
	r.mu.Lock()
	r.entries = append(r.entries, e)
	r.mu.Unlock()
}

// notReached is the entry of a manager an interrupted sweep did not handle.
func notReached(obj *unstructured.Unstructured) Entry {
	return Entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), State: StateDeferred, Message: "the sweep was interrupted before it got to this manager"}
}

// stateStore asks the API server whether NamespaceManagers have a status
// subresource (nsman's CRD) or not (the original one).
func (s *Sweeper) stateStore() (stateStore, error) {
	gv := ManagerResource.GroupVersion().String()
	resources, err := s.clients.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return stateStore{}, ErrNotInstalled
	}
	if err != nil {
		return stateStore{}, fmt.Errorf("discover %s: %w", gv, err)
	}
	var store stateStore
	served := false
	for _, r := range resources.APIResources {
		switch r.Name {
		case ManagerResource.Resource:
			served = true
		case ManagerResource.Resource + "/status":
			store.inStatus = true
		}
	}
	if !served {
		return stateStore{}, ErrNotInstalled
	}
	return store, nil
}

// now is the time to evaluate at: --at in a dry run, else the API server's.
func (s *Sweeper) now() time.Time {
	if !s.cfg.At.IsZero() {
		return s.cfg.At
	}
	now, ok := s.clients.Observer.Now()
	if !ok {
		s.log.Warn("API server sent no Date header; using the local clock")
		return time.Now()
	}
	if skew := s.clients.Observer.Skew(); skew > 5*time.Second || skew < -5*time.Second {
		s.log.Warn("local clock differs from the API server's; using the server's", "skew", skew.Round(time.Millisecond).String())
	}
	return now
}

// namespaces lists the namespaces once per sweep, on first need, so that a
// manager costs no request of its own to find its target.
func (s *Sweeper) namespaces(ctx context.Context, r *sweepRun) (map[string]namespaceInfo, error) {
	r.nsOnce.Do(func() {
		nsClient := s.clients.Metadata.Resource(corev1.SchemeGroupVersion.WithResource("namespaces"))
		p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
			return nsClient.List(ctx, opts)
		}))
		p.PageSize = s.cfg.PageSize
		r.ns = map[string]namespaceInfo{}
		r.nsErr = p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
			m, ok := o.(*metav1.PartialObjectMetadata)
			if !ok {
				return fmt.Errorf("unexpected namespace list item %T", o)
			}
			r.ns[m.Name] = namespaceInfo{uid: m.UID, created: m.CreationTimestamp.Time, terminating: m.DeletionTimestamp != nil}
			return nil
		})
		if r.nsErr != nil {
			r.nsErr = fmt.Errorf("list namespaces: %w", r.nsErr)
		}
	})
	return r.ns, r.nsErr
}

// handle decides for one manager, acts on the decision, and records the
// outcome on the manager: its Status when that changed, and an Event when
// its state changed to one that gets an Event.
func (s *Sweeper) handle(ctx context.Context, r *sweepRun, m listed) Entry {
	obj := m.obj
	stored := r.store.read(m)
	rec := &record{stored: stored, next: stored.clone()}
	e := s.decide(ctx, r, obj, rec)
	switch e.State {
	case StateDeactivated, StateBusy:
		// Left alone: deactivated managers are not written to, and a busy
		// one belongs to another sweep.
		return e
	}
	rec.next.observe(e, obj.GetGeneration(), r.now)
	if e.State != stored.State && !rec.announced {
		s.announce(ctx, r, obj, e)
	}
	patch, changed := r.store.update(rec.stored, rec.next, "", rec.deactivate)
	if !changed {
		return e
	}
	// Recorded even when the action was cut off, so that its claim is
	// released and the failure seen.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := s.patchRetrying(rctx, obj.GetNamespace(), obj.GetName(), patch); err != nil {
		msg := "record the outcome on the manager"
		if e.State == StateFired {
			msg = "action done, but recording it failed (a later sweep completes it)"
		}
		return failed(e, fmt.Errorf("%s: %w", msg, err))
	}
	return e
}

// recordTimeout bounds the write of a manager's record.
const recordTimeout = 5 * time.Second

// decide evaluates one manager and, when a policy holds, fires it.
func (s *Sweeper) decide(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, rec *record) Entry {
	e := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	m, problems := policy.Parse(obj)
	e.Target = m.Target()
	if m.Deactivated {
		e.State, e.Message = StateDeactivated, "spec.deactivated is true"
		return e
	}
	if len(problems) > 0 {
		e.State, e.Message = StateInvalid, fmt.Sprintf("%d problem(s); first: %s", len(problems), problems[0].Error())
		for _, p := range problems {
			e.Problems = append(e.Problems, p.Error())
		}
		return e
	}
	if msg := s.refuse(m); msg != "" {
		e.State, e.Message = StateForbidden, msg
		return e
	}

	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return failed(e, err)
	}
	ns, exists := namespaces[e.Target]
	t := target{name: e.Target, uid: ns.uid}

	if c := rec.stored.Claim; c != nil && c.Generation == m.Generation {
		if r.now.Before(c.Expires) {
			e.State = StateBusy
			e.Policy, e.Action = c.Policy, c.Action
			e.Message = fmt.Sprintf("claimed by sweep %s until %s", c.Sweep, c.Expires.UTC().Format(time.RFC3339))
			return e
		}
		// A sweep claimed it and did not finish: complete its action, whatever
		// became of the target since (DELETE and SCALE_DOWN are idempotent; a
		// webhook is re-sent with the same Idempotency-Key).
		if i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == c.Policy }); i >= 0 {
			resumed := target{name: e.Target, uid: cmp.Or(c.TargetUID, ns.uid), resumed: true, going: !exists || ns.terminating}
			return s.fire(ctx, r, obj, m, i, "completing the expired claim of sweep "+c.Sweep, resumed, rec)
		}
	}

	// An earlier sweep of this generation got as far as the action: finish
	// what it left. If the action succeeded, only the deactivation is
	// missing. If a DELETE failed, its answer may have been lost (a reset
	// connection, a timeout) while the namespace went: then it is done.
	if last := rec.stored.LastAction; last != nil && rec.stored.ObservedGeneration == m.Generation {
		i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == last.Policy })
		going := !exists || ns.terminating
		switch {
		case i < 0:
		case last.Result == ResultSucceeded:
			return s.fire(ctx, r, obj, m, i, "the action succeeded before; deactivating", target{name: e.Target, uid: ns.uid, resumed: true, going: going, done: true}, rec)
		case last.Action == policy.ActionDelete && going:
			return s.fire(ctx, r, obj, m, i, "namespace "+e.Target+" went after a DELETE whose answer was lost", target{name: e.Target, uid: ns.uid, resumed: true, going: true}, rec)
		}
	}

	switch {
	case !exists:
		e.State, e.Message = StateTargetMissing, fmt.Sprintf("namespace %s does not exist", e.Target)
		return e
	case ns.terminating:
		e.State, e.Message = StateTargetTerminating, fmt.Sprintf("namespace %s is terminating", e.Target)
		return e
	}

	in := policy.Input{Now: r.now, TargetCreated: ns.created, Checks: rec.stored.Checks, Pods: map[int]policy.PodsCheck{}}
	for {
		out := policy.Evaluate(m, in)
		switch out.Verdict {
		case policy.NeedPods:
			check, err := s.checkPods(ctx, r, e.Target, m.Policies[out.Policy].Condition.PodLabels)
			if err != nil {
				return failed(e, err)
			}
			in.Pods[out.Policy] = check
			continue
		case policy.Fire:
			fired := s.fire(ctx, r, obj, m, out.Policy, out.Reason, t, rec)
			fired.Conditions = conditions(out.Policies)
			return fired
		}
		e.State = StateWaiting
		e.Due = timePtr(out.NextDue)
		e.Conditions = conditions(out.Policies)
		details := make([]string, 0, len(out.Policies))
		for _, p := range out.Policies {
			details = append(details, p.Detail)
		}
		e.Message = strings.Join(details, "; ")
		rec.next.Checks = out.Checks
		return e
	}
}

// logDecision writes one line per manager with stable keys. What changes
// nothing (waiting, deactivated) is logged at debug level only.
func (s *Sweeper) logDecision(ctx context.Context, e Entry) {
	level := slog.LevelInfo
	switch e.State {
	case StateFailed:
		level = slog.LevelError
	case StateWaiting, StateDeactivated:
		level = slog.LevelDebug
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("manager", e.Namespace+"/"+e.Name),
		slog.String("namespace", e.Target),
		slog.String("state", string(e.State)),
		slog.Bool("dryRun", s.cfg.DryRun),
	}
	if e.Policy != "" {
		attrs = append(attrs, slog.String("policy", e.Policy), slog.String("action", e.Action))
	}
	if len(e.Effects) > 0 {
		attrs = append(attrs, slog.Any("effects", e.Effects))
	}
	if e.Due != nil {
		attrs = append(attrs, slog.Time("due", *e.Due))
	}
	attrs = append(attrs, slog.String("message", e.Message))
	s.log.LogAttrs(ctx, level, "decision", attrs...)
}

// refuse applies the tenancy guards, returning why a manager may not act.
func (s *Sweeper) refuse(m policy.Manager) string {
	target := m.Target()
	if slices.Contains(s.cfg.ProtectedNamespaces, target) {
		return fmt.Sprintf("namespace %s is protected", target)
	}
	if target != m.Namespace && !slices.Contains(s.cfg.TrustedNamespaces, m.Namespace) {
		how := "spec.namespace"
		if m.TargetNamespace == "" {
			how = "its name"
		}
		return fmt.Sprintf("a manager in namespace %s may only target %s, not %s (by %s); trusted namespaces: %s",
			m.Namespace, m.Namespace, target, how, strings.Join(s.cfg.TrustedNamespaces, ", "))
	}
	return ""
}

func failed(e Entry, err error) Entry {
	e.State, e.Message = StateFailed, err.Error()
	return e
}
