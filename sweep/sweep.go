package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/reclaim"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/usage"
	"github.com/nsman/nsman/report"
)

// ErrInterrupted means the sweep was stopped (SIGTERM, say) before it got to
// every manager; the Report covers what it did.
var ErrInterrupted = errors.New("sweep interrupted")

// ErrNotInstalled means the API server does not serve NamespaceManagers.
var ErrNotInstalled = errors.New("the NamespaceManager CRD (namespacemanagers.k8s.consol.de) is not installed")

// Run performs one sweep. Per-manager failures are reported in the Report
// and never stop the sweep. The error is for a sweep that could not run at
// all (no API server, CRD not installed), or ErrInterrupted, with the Report
// of what it did, when ctx was cancelled before it got to every manager.
func (s *Sweeper) Run(ctx context.Context) (report.Report, error) {
	began := time.Now()
	status, err := s.statusLocation()
	if err != nil {
		return report.Report{}, err
	}
	r := &sweepRun{status: status, stop: ctx, governed: decide.NewGovernors(s.cfg.TrustedNamespaces), pairSlots: make(chan struct{}, s.cfg.Concurrency),
		share: execute.NewFairShare(s.cfg.MaxActions, s.cfg.SweepID)}
	s.probe(r)
	// Work already started outlives an interrupt by InterruptGrace, so that
	// an action under way finishes and is recorded; nothing new starts.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(s.cfg.InterruptGrace, cancelWork) })
	defer stopGrace()

	q := s.startWorkers(ctx, work, r)
	l := s.listManagers(ctx, work, r, q)
	// Rules go last: the namespaces they may touch depend on every manager.
	s.queueRules(ctx, r, &l, q)
	q.wg.Wait()
	// Every subject evaluated, the places under --max-actions go round-robin
	// across namespaces.
	if r.exec != nil && s.cfg.MaxActions > 0 {
		r.exec.Grant(r.bounded)
		r.bounded(len(r.afterGrant), func(i int) { r.afterGrant[i]() })
	}

	interrupted := ctx.Err()
	if l.err != nil && interrupted == nil && !l.any {
		// Nothing was listed: the sweep could not run at all.
		if apierrors.IsNotFound(l.err) {
			return report.Report{}, ErrNotInstalled
		}
		return report.Report{}, fmt.Errorf("list NamespaceManagers: %w", l.err)
	}
	if !l.any {
		r.now = s.now()
	}
	if l.everyManager != nil && interrupted == nil {
		if namespaces, err := s.namespaces(work, r); err == nil {
			stale := record.Stale{Writer: s.writer, Log: s.log, DryRun: s.cfg.DryRun, Now: r.now, Ours: s.ours, Bounded: r.bounded, Stop: r.stop}
			l.stale = stale.Remove(work, namespaces, l.everyManager)
		}
	}
	rep := s.report(r, l, began)
	rep.Summary.MissingTrusted = s.missingTrusted(work, r)
	if interrupted != nil {
		return rep, fmt.Errorf("%w: %w", ErrInterrupted, interrupted)
	}
	return rep, nil
}

// sweepRun is the state of one Run.
type sweepRun struct {
	now time.Time
	// frozen: now is in a freeze, which ends (with any it runs into) at
	// frozenUntil.
	frozen      bool
	frozenUntil time.Time
	// stop is done once the sweep is interrupted: no action starts after
	// it, while those under way go on for InterruptGrace.
	stop   context.Context
	status record.StatusLocation
	// share hands out the places of --max-actions; afterGrant is what
	// waits for them to be carried out (see Run).
	share        *execute.FairShare
	afterGrantMu sync.Mutex
	afterGrant   []func()

	nsOnce sync.Once
	nsErr  error
	ns     map[string]cluster.Namespace
	// What the sweep reads of namespaces to decide on them, each read
	// once however many subjects ask (see probe, reclaim and usage).
	pods     *probe.Pods
	activity *probe.Activity
	reclaim  *reclaim.Reclaim
	stuck    *probe.Stuck
	// kinds resolves the kinds that sleep, awake tells what is awake where
	// asleep; owners indexes owners (OWNER_GONE); traffic is IDLE's.
	kinds   *probe.Kinds
	awake   *probe.Awake
	owners  *probe.Owners
	traffic *usage.Traffic

	// eval evaluates the sweep's subjects, exec carries out what it
	// decided, from its first page on.
	eval *decide.Evaluator
	exec *execute.Executor
	// governed are the managers that may shield a namespace from rules.
	// rules are handled once the listing is complete, else deferred
	// (rulesBlocked).
	governed     *decide.Governors
	rules        []listpage.Listed
	rulesBlocked string
	// pairSlots bounds the rules' pairs handled at once (see bounded).
	pairSlots chan struct{}

	mu      sync.Mutex
	entries []report.Entry
}

// add keeps entries, the caller's to give: the first are kept as they
// are, not copied (a rule's over 10,000 namespaces, say).
func (r *sweepRun) add(entries ...report.Entry) {
	r.mu.Lock()
	if r.entries == nil {
		r.entries = entries
	} else {
		r.entries = append(r.entries, entries...)
	}
	r.mu.Unlock()
}

// queue hands listed managers to Concurrency workers, and the WEBHOOK
// actions they decide on to Concurrency more (hooks): a receiver that
// keeps nsman waiting holds up no DELETE, SCALE_DOWN or rule.
type queue struct {
	jobs  chan listpage.Listed
	hooks hookQueue
	wg    sync.WaitGroup
}

// startWorkers starts the workers that evaluate each manager queued and
// carry out the decision, with work; once ctx is done, what is queued is
// reported as not reached.
func (s *Sweeper) startWorkers(ctx, work context.Context, r *sweepRun) *queue {
	q := &queue{jobs: make(chan listpage.Listed)}
	q.hooks.ready = sync.NewCond(&q.hooks.mu)
	q.hooks.offset = execute.Rotation(s.clock())
	var evaluating sync.WaitGroup
	for range s.cfg.Concurrency {
		evaluating.Go(func() {
			for l := range q.jobs {
				var entries []report.Entry
				switch {
				case ctx.Err() != nil:
					entries = s.unhandled(l)
				case isRule(l.Obj):
					entries = s.handleRule(work, r, l)
				default:
					rec := s.managerRecord(r, l)
					evaluate := func() decide.Decision {
						return r.eval.EvaluateManager(work, l.Obj, rec.Stored, decide.Check(r.pods.Checks(false)))
					}
					r.carry(work, subject{rec: rec, again: evaluate,
						done: func(e report.Entry) { s.done(work, r, []report.Entry{e}) },
						hook: func(d decide.Decision) { q.hooks.put(hookJob{l: l, rec: rec, d: d}) },
					}, evaluate())
					continue
				}
				s.done(work, r, entries)
			}
		})
	}
	for range s.cfg.Concurrency {
		q.wg.Go(func() {
			for job, ok := q.hooks.take(); ok; job, ok = q.hooks.take() {
				entries := s.unhandled(job.l)
				if ctx.Err() == nil {
					entries = []report.Entry{r.exec.CarryOut(work, job.rec, job.d)}
				}
				s.done(work, r, entries)
			}
		})
	}
	q.wg.Go(func() {
		evaluating.Wait()
		q.hooks.close()
	})
	return q
}

// done logs and reports entries.
func (s *Sweeper) done(ctx context.Context, r *sweepRun, entries []report.Entry) {
	for _, e := range entries {
		s.logDecision(ctx, e)
	}
	r.add(entries...)
}

// give queues l, unless ctx is done first: then l is reported unhandled.
func (s *Sweeper) give(ctx context.Context, r *sweepRun, q *queue, l listpage.Listed) {
	if ctx.Err() == nil {
		select {
		case q.jobs <- l:
			return
		case <-ctx.Done():
		}
	}
	r.add(s.unhandled(l)...)
}

// listing is what listing the managers found.
type listing struct {
	// err says why listing stopped, if it did; any: a manager was listed.
	err error
	any bool
	// skipped counts the managers of other shards.
	skipped int
	// everyManager holds the UID of every manager of the cluster, when the
	// sweep listed them all: the records of rules not among them are stale.
	everyManager map[types.UID]bool
	stale        record.StaleRemoval
}

// listManagers lists the managers the sweep selects and queues those of
// this shard that are no rules, keeping the rules for later. The
// namespaces are listed beside, from the first manager on, and so is the
// pods index when a rule will be screened with it.
func (s *Sweeper) listManagers(ctx, work context.Context, r *sweepRun, q *queue) listing {
	var l listing
	uids := map[types.UID]bool{}
	indexing, awakeIndexing, owning := false, false, false
	// The index of awake workloads, once a sweep will answer from it, is
	// listed beside the managers and the namespaces, not after them.
	awakeAhead := func() {
		if !awakeIndexing && r.awake.Indexed() {
			awakeIndexing = true
			q.wg.Go(func() { r.awake.Prefetch(work) })
		}
	}
	countAhead := func(page *listpage.ManagerPage) {
		r.activity.ExpectAhead(page, s.clock(), s.ours, s.cfg.TrustedNamespaces)
		r.awake.ExpectAhead(page, s.ours)
		awakeAhead()
	}
	l.err = s.reads().EachManagerPaged(ctx, false, countAhead, func(m listpage.Listed) {
		uids[m.Obj.GetUID()] = true
		if !l.any {
			l.any = true
			s.begin(r)
			q.wg.Go(func() { _, _ = s.namespaces(work, r) })
		}
		if isRule(m.Obj) {
			r.rules = append(r.rules, m)
			podsIndex, activityIndex, rule := s.readsAhead(r, m)
			if !indexing && podsIndex {
				indexing = true
				q.wg.Go(func() { _, _ = r.pods.Pending(work) })
			}
			if activityIndex && !r.frozen { // in a freeze no IDLE policy reads it
				r.activity.IndexAll(work, q.wg.Go)
				r.traffic.Ahead(work, rule)
			}
			if !owning && weighsOwners(s.cfg, r, m) {
				owning = true
				q.wg.Go(func() { r.owners.Prefetch(work) })
			}
			if sleepsAhead(r.status.Read(m)) {
				r.awake.IndexAll()
				awakeAhead()
			}
			return
		}
		r.governed.Note(m.Obj)
		if !s.ours(m.Obj.GetUID()) {
			l.skipped++
			return
		}
		s.give(ctx, r, q, m) // interrupted: the next page is not fetched
	})
	switch {
	case l.err != nil && ctx.Err() == nil && l.any:
		s.log.Error("listing stopped half-way; the managers listed were handled", "error", l.err.Error())
	case l.err == nil && s.cfg.Namespace == "" && s.cfg.LabelSelector == "":
		l.everyManager = uids
	}
	return l
}

// queueRules queues the rules, once every manager is listed: a sweep that
// listed only some (--namespace, --selector) lists the others for the
// namespaces they govern; one whose listing failed defers its rules.
func (s *Sweeper) queueRules(ctx context.Context, r *sweepRun, l *listing, q *queue) {
	defer close(q.jobs)
	switch {
	case l.err != nil:
		r.rulesBlocked = "rules wait for a sweep that lists every manager: listing the managers failed"
	case l.everyManager == nil && len(r.rules) > 0:
		all := map[types.UID]bool{}
		err := s.reads().EachManager(ctx, true, func(m listpage.Listed) {
			all[m.Obj.GetUID()] = true
			if !isRule(m.Obj) {
				r.governed.Note(m.Obj)
			}
		})
		switch {
		case err == nil:
			l.everyManager = all
		case ctx.Err() == nil:
			r.rulesBlocked = fmt.Sprintf("rules wait for a sweep that lists every manager: %v", err)
		}
	}
	for _, m := range r.rules {
		s.give(ctx, r, q, m)
	}
}

// report is the Report of run r.
func (s *Sweeper) report(r *sweepRun, l listing, began time.Time) report.Report {
	counts := &execute.Counts{}
	if r.exec != nil {
		counts = &r.exec.Counts
	}
	slices.SortFunc(r.entries, func(a, b report.Entry) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Target, b.Target))
	})
	rep := report.Report{Version: report.ReportVersion, Entries: r.entries, Summary: report.Summary{
		Now:             r.now.UTC(),
		DryRun:          s.cfg.DryRun,
		Managers:        len(r.entries),
		States:          map[report.State]int{},
		Requests:        s.clients.Observer.Requests(),
		DurationSeconds: time.Since(began).Seconds(),
		StaleRecords:    l.stale.Removed,
	}}
	rep.Summary.StaleRecordsLeft, rep.Summary.TrafficQueries = l.stale.Left, r.traffic.Settle()
	if l.err != nil && r.stop.Err() == nil {
		rep.Summary.ListError = fmt.Sprintf("list NamespaceManagers: %v", l.err)
	}
	if s.notifier != nil {
		rep.Summary.Notifications = map[string]int{"sent": int(counts.NotifySent.Load()), "failed": int(counts.NotifyFailed.Load())}
	}
	if s.cfg.ShardCount > 1 {
		rep.Summary.Shard = &report.Shard{Index: s.cfg.ShardIndex, Count: s.cfg.ShardCount, Skipped: l.skipped}
	}
	stuck := map[string]bool{}
	for _, e := range r.entries {
		rep.Summary.States[e.State]++
		if e.Stuck != nil {
			stuck[e.Target] = true
		}
		if e.Reclaimed != nil {
			if rep.Summary.Reclaimed == nil {
				rep.Summary.Reclaimed = &report.Reclaimed{}
			}
			rep.Summary.Reclaimed.Add(*e.Reclaimed)
		}
	}
	rep.Summary.ReclaimUnknown = int(counts.ReclaimUnknown.Load())
	if r.frozen {
		rep.Summary.FrozenUntil = decide.TimePtr(r.frozenUntil)
	}
	rep.Summary.Stuck = len(stuck)
	return rep
}

// missingTrusted is the trusted namespaces that do not exist, from the
// sweep's list of namespaces, else (no manager listed) a list by name each,
// as many as --trusted-namespaces names. Each is logged: whoever creates
// one gets trusted managers and rules.
func (s *Sweeper) missingTrusted(ctx context.Context, r *sweepRun) []string {
	var missing []string
	for _, name := range s.cfg.TrustedNamespaces {
		exists, known := false, false
		if r.ns != nil && r.nsErr == nil {
			_, exists = r.ns[name]
			known = true
		} else {
			found := false
			err := cluster.EachItem(ctx, 1, metav1.ListOptions{FieldSelector: "metadata.name=" + name}, s.reads().MetadataLister("namespaces"), func(*metav1.PartialObjectMetadata) { found = true })
			exists, known = found, err == nil
		}
		if known && !exists {
			missing = append(missing, name)
			s.log.Warn("a trusted namespace does not exist: whoever may create namespaces may create it, and its managers and rules would be trusted; create it yourself, or leave it out of --trusted-namespaces", "namespace", name)
		}
	}
	return missing
}

// unhandled is the report of a manager an interrupted sweep did not
// handle: its entry, or a rule's, from the shard that owns the rule.
func (s *Sweeper) unhandled(l listpage.Listed) []report.Entry {
	e := report.Entry{Namespace: l.Obj.GetNamespace(), Name: l.Obj.GetName(), Rule: isRule(l.Obj)}
	if e.Rule && !s.ours(l.Obj.GetUID()) {
		return nil
	}
	return []report.Entry{execute.NotReached(e, "it got to this manager")}
}

// statusLocation asks the API server whether NamespaceManagers have a
// status subresource (nsman's CRD) or not (the original one).
func (s *Sweeper) statusLocation() (record.StatusLocation, error) {
	gv := cluster.ManagerResource.GroupVersion().String()
	resources, err := s.clients.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return record.StatusLocation{}, ErrNotInstalled
	}
	if err != nil {
		return record.StatusLocation{}, fmt.Errorf("discover %s: %w", gv, err)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == name })
	}
	if !has(cluster.ManagerResource.Resource) {
		return record.StatusLocation{}, ErrNotInstalled
	}
	return record.StatusLocation{Subresource: has(cluster.ManagerResource.Resource + "/status")}, nil
}

// now is the time to evaluate at, as clock has it, with a warning when the
// API server has not told its time or the local clock is off.
func (s *Sweeper) now() time.Time {
	if _, told := s.clients.Observer.Now(); s.cfg.At.IsZero() && !told {
		s.log.Warn("API server sent no Date header; using the local clock")
	} else if skew := s.clients.Observer.Skew().Abs(); s.cfg.At.IsZero() && skew > 5*time.Second {
		s.log.Warn("local clock differs from the API server's; using the server's", "skew", s.clients.Observer.Skew().Round(time.Millisecond).String())
	}
	return s.clock()
}

// clock is the time now: --at in a dry run, else the API server's time as
// of this moment.
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
func (s *Sweeper) namespaces(ctx context.Context, r *sweepRun) (map[string]cluster.Namespace, error) {
	r.nsOnce.Do(func() {
		r.ns = map[string]cluster.Namespace{}
		r.nsErr = s.reads().EachNamespace(ctx, func(m *metav1.PartialObjectMetadata) {
			r.ns[m.Name] = cluster.NamespaceOf(m)
		})
		if r.nsErr != nil {
			r.nsErr = fmt.Errorf("list namespaces: %w", r.nsErr)
		}
	})
	return r.ns, r.nsErr
}

// logDecision logs one line per entry with stable keys; what changes
// nothing (waiting unwarned, deactivated, done, governed, asleep) at debug level.
func (s *Sweeper) logDecision(ctx context.Context, e report.Entry) {
	level := slog.LevelInfo
	switch {
	case e.State == report.StateFailed:
		level = slog.LevelError
	case e.Warning == nil && slices.Contains([]report.State{report.StateWaiting, report.StateDeactivated, report.StateDone, report.StateGoverned, report.StateAsleep}, e.State):
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
	if len(e.Warnings) > 0 {
		attrs = append(attrs, slog.Any("warnings", e.Warnings))
	}
	if e.Reclaimed != nil {
		attrs = append(attrs, slog.String("reclaimed", e.Reclaimed.String()))
	}
	if e.Stuck != nil {
		attrs = append(attrs, slog.String("stuck", e.Stuck.Cause()))
	}
	if e.Due != nil {
		attrs = append(attrs, slog.Time("due", *e.Due))
	}
	attrs = append(attrs, slog.String("message", e.Message))
	s.log.LogAttrs(ctx, level, "decision", attrs...)
}
