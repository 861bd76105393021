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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// ErrInterrupted means the sweep was stopped (SIGTERM, say) before it got to
// every manager; the Report covers what it did.
var ErrInterrupted = errors.New("sweep interrupted")

// ErrNotInstalled means the API server does not serve NamespaceManagers.
var ErrNotInstalled = errors.New("the NamespaceManager CRD (namespacemanagers.k8s.consol.de) is not installed")

// sweepRun is the state of one Run.
type sweepRun struct {
	now time.Time
	// stop is done once the sweep is interrupted: no action starts after
	// it, while those under way go on for InterruptGrace.
	stop    context.Context
	store   stateStore
	actions atomic.Int64

	nsOnce sync.Once
	nsErr  error
	ns     map[string]namespaceInfo

	// podChecks counts pods checks; after PodIndexAfter of them, pods
	// answers come from one cluster-wide list.
	podChecks atomic.Int64
	pods      podIndex
	// failed indexes the pods in phase Failed and the failed Jobs, for
	// PODS_FAILED checks past PodIndexAfter.
	failed podIndex

	// governed maps each namespace a single-target manager may act on to
	// that manager, namespace/name, for every manager listed (of every
	// shard): rules leave those namespaces alone (see noteGoverned).
	// rules are the rules listed: they are handled once the listing is
	// complete, and when it is not, reported deferred with rulesBlocked.
	governed     map[string]string
	rules        []listed
	rulesBlocked string
	// pairSlots bounds the rules' pairs handled at once, all rules of the
	// sweep together, to Concurrency.
	pairSlots chan struct{}
	// notifySent and notifyFailed count the notifications of --notify-url.
	notifySent, notifyFailed atomic.Int64

	mu      sync.Mutex
	entries []Entry
}

type namespaceInfo struct {
	uid         types.UID
	created     time.Time
	terminating bool
	// labels, resourceVersion and pairs are what rules read: the labels
	// they select by, the version a pair's claim is conditional on, and the
	// pairs' records (PairAnnotationPrefix annotations, by key).
	labels          packedLabels
	resourceVersion string
	pairs           map[string]string
	// hold is the namespace's HoldAnnotation, empty when it has none.
	hold string
}

func namespaceInfoOf(m *metav1.PartialObjectMetadata) namespaceInfo {
	info := namespaceInfo{uid: m.UID, created: m.CreationTimestamp.Time, terminating: m.DeletionTimestamp != nil,
		labels: packLabels(m.Name, m.Labels), resourceVersion: m.ResourceVersion}
	info.hold = m.Annotations[HoldAnnotation]
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, PairAnnotationPrefix) {
			if info.pairs == nil {
				info.pairs = map[string]string{}
			}
			info.pairs[k] = v
		}
	}
	return info
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
	r := &sweepRun{store: store, stop: ctx, governed: map[string]string{}, pairSlots: make(chan struct{}, s.cfg.Concurrency)}
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
					s.addNotReached(r, m.obj)
					continue
				}
				if isRule(m.obj) {
					for _, e := range s.handleRule(work, r, m) {
						s.logDecision(work, e)
						r.add(e)
					}
					continue
				}
				e := s.handle(work, r, m)
				s.logDecision(work, e)
				r.add(e)
			}
		})
	}
	first, indexing := true, false
	skipped := 0
	listedUIDs := map[types.UID]bool{}
	err = s.eachManager(ctx, false, func(m listed) {
		listedUIDs[m.obj.GetUID()] = true
		if first {
			r.now = s.now()
			first = false
			// The namespaces are listed while the rest of the managers
			// are: at 10,000 managers, that is a second of the sweep.
			workers.Go(func() { _, _ = s.namespaces(work, r) })
		}
		if isRule(m.obj) {
			r.rules = append(r.rules, m)
			if !indexing && s.indexAhead(r, m) {
				// The pods index is listed beside the namespaces, not
				// after them.
				indexing = true
				workers.Go(func() { _, _ = s.podIndex(work, r) })
			}
			return
		}
		s.noteGoverned(r, m.obj)
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
	// Rules go last: which namespaces they may touch depends on every
	// single-target manager, so on the whole listing.
	// everyManager holds the UID of every manager of the cluster, when the
	// sweep listed them all: the records of rules not among them are stale.
	var everyManager map[types.UID]bool
	switch {
	case err != nil:
		r.rulesBlocked = "rules wait for a sweep that lists every manager: listing the managers failed"
	case s.cfg.Namespace == "" && s.cfg.LabelSelector == "":
		everyManager = listedUIDs
	case len(r.rules) > 0:
		// The sweep saw some managers only: the rest are listed for the
		// namespaces they govern.
		all := map[types.UID]bool{}
		gerr := s.eachManager(ctx, true, func(m listed) {
			all[m.obj.GetUID()] = true
			if !isRule(m.obj) {
				s.noteGoverned(r, m.obj)
			}
		})
		switch {
		case gerr == nil:
			everyManager = all
		case ctx.Err() == nil:
			r.rulesBlocked = fmt.Sprintf("rules wait for a sweep that lists every manager: %v", gerr)
		}
	}
	for _, m := range r.rules {
		if ctx.Err() != nil {
			s.addNotReached(r, m.obj)
			continue
		}
		select {
		case jobs <- m:
		case <-ctx.Done():
			s.addNotReached(r, m.obj)
		}
	}
	close(jobs)
	workers.Wait()
	interrupted := ctx.Err()
	var listErr string
	if err != nil && interrupted == nil {
		if first {
			// Nothing was listed: the sweep could not run at all.
			if apierrors.IsNotFound(err) {
				return Report{}, ErrNotInstalled
			}
			return Report{}, fmt.Errorf("list NamespaceManagers: %w", err)
		}
		// Managers of the pages listed were handled, some perhaps acted
		// on: the report says what was done, and that it is not all.
		listErr = fmt.Sprintf("list NamespaceManagers: %v", err)
		s.log.Error("listing stopped half-way; the managers listed were handled", "error", listErr)
	}
	if first {
		r.now = s.now()
	}
	staleRecords := 0
	if everyManager != nil && interrupted == nil {
		staleRecords = s.removeStaleRecords(work, r, everyManager)
	}

	slices.SortFunc(r.entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Target, b.Target))
	})
	report := Report{Version: ReportVersion, Entries: r.entries, Summary: Summary{
		Now:             r.now.UTC(),
		DryRun:          s.cfg.DryRun,
		Managers:        len(r.entries),
		States:          map[State]int{},
		Requests:        s.clients.Observer.Requests(),
		DurationSeconds: time.Since(began).Seconds(),
		ListError:       listErr,
		StaleRecords:    staleRecords,
	}}
	if s.cfg.NotifyURL != "" && !s.cfg.DryRun {
		report.Summary.Notifications = map[string]int{"sent": int(r.notifySent.Load()), "failed": int(r.notifyFailed.Load())}
	}
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

// noteGoverned records the namespace a single-target manager aims at as
// governed by it, if the manager may act on it: it lives there, or in a
// trusted namespace. A manager the guards refuse shields nothing from rules.
func (s *Sweeper) noteGoverned(r *sweepRun, obj *unstructured.Unstructured) {
	target := aimsAt(obj)
	if target == obj.GetNamespace() || slices.Contains(s.cfg.TrustedNamespaces, obj.GetNamespace()) {
		r.governed[target] = obj.GetNamespace() + "/" + obj.GetName()
	}
}

func (r *sweepRun) add(e Entry) {
	r.mu.Lock()
	r.entries = append(r.entries, e)
	r.mu.Unlock()
}

// addNotReached reports a manager an interrupted sweep did not handle; a
// rule, only from the shard that owns it.
func (s *Sweeper) addNotReached(r *sweepRun, obj *unstructured.Unstructured) {
	e := notReached(obj)
	if isRule(obj) {
		if ShardOf(obj.GetUID(), s.cfg.ShardCount) != s.cfg.ShardIndex {
			return
		}
		e.Rule = true
	}
	r.add(e)
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

// clock is the time now, as now has it, without now's warnings: --at in a
// dry run, else the API server's time as of this moment.
func (s *Sweeper) clock() time.Time {
	if !s.cfg.At.IsZero() {
		return s.cfg.At
	}
	if now, ok := s.clients.Observer.Now(); ok {
		return now
	}
	return time.Now()
}

// namespaces lists the namespaces once per sweep, on first need, so that a
// manager costs no request of its own to find its target.
func (s *Sweeper) namespaces(ctx context.Context, r *sweepRun) (map[string]namespaceInfo, error) {
	r.nsOnce.Do(func() {
		r.ns = map[string]namespaceInfo{}
		r.nsErr = s.eachMetadata(ctx, "namespaces", metav1.ListOptions{}, func(m *metav1.PartialObjectMetadata) {
			r.ns[m.Name] = namespaceInfoOf(m)
		})
		if r.nsErr != nil {
			r.nsErr = fmt.Errorf("list namespaces: %w", r.nsErr)
		}
	})
	return r.ns, r.nsErr
}

// handle evaluates one manager and carries out what that decided.
func (s *Sweeper) handle(ctx context.Context, r *sweepRun, m listed) Entry {
	stored := r.store.read(m)
	d := s.evaluate(ctx, r, m.obj, stored)
	switch {
	case d.plan != nil:
		return s.execute(ctx, r, m.obj, stored, d)
	case d.untouched:
		return d.entry
	}
	return s.record(ctx, r, m.obj, stored, d.entry, d.checks)
}

// logDecision writes one line per manager with stable keys. What changes
// nothing (waiting, deactivated, a rule's done and governed namespaces) is
// logged at debug level only.
func (s *Sweeper) logDecision(ctx context.Context, e Entry) {
	level := slog.LevelInfo
	switch e.State {
	case StateFailed:
		level = slog.LevelError
	case StateWaiting, StateDeactivated, StateDone, StateGoverned:
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
