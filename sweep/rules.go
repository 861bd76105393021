package sweep

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// A rule is a manager with a namespaceSelector or namePatterns instead of
// spec.namespace: each (rule, namespace) pair it matches is evaluated and
// carried out as a single-target manager is, once per spec of the rule (a
// change of spec.deactivated alone does not count). The rule's own status
// only summarizes, within a fixed size.

// isRule reports whether a listed manager's spec has a namespaceSelector
// or namePatterns; Parse judges whether it is a valid rule.
func isRule(obj *unstructured.Unstructured) bool {
	spec, _ := obj.Object["spec"].(map[string]any)
	return spec["namespaceSelector"] != nil || spec["namePatterns"] != nil
}

// handleRule evaluates a rule on every namespace it matches and carries out
// what that decided: one entry per pair of this shard, or, from the shard
// that owns the rule, one for a rule that does not stand.
func (s *Sweeper) handleRule(ctx context.Context, r *sweepRun, l listpage.Listed) []report.Entry {
	own := s.managerRecord(r, l)
	owner := s.ours(l.Obj.GetUID())
	m, d, stands := s.gateRule(ctx, r, l.Obj)
	if !stands {
		if !owner {
			return nil
		}
		return []report.Entry{r.exec.CarryOut(ctx, own, d)}
	}
	ru := s.newRuleRun(r, l.Obj, m, own.Stored)
	ru.owner = owner
	namespaces, _ := s.namespaces(ctx, r)
	entries, matched := ru.match(namespaces)
	ru.actInChunks(ctx, ru.screen(ctx))
	finish := func() []report.Entry {
		// The governed entries, then the pairs', in the one array match
		// made for them: a rule over 10,000 namespaces copies none.
		entries = entries[:len(entries)+len(ru.pairs)]
		entries = append(entries, ru.stuck(ctx)...)
		ru.tally.Flush(ctx, s.eventsOn(own.Obj, own.Now))
		if owner {
			s.summarize(ctx, own, m, matched, entries, ru.ruleHoldIgnored)
		}
		return entries
	}
	if ru.offered.Load() {
		// Its status and Events say what became of the pairs offered a
		// place under --max-actions: they wait for the grant.
		r.afterGrantMu.Lock()
		r.afterGrant = append(r.afterGrant, func() { s.done(ctx, r, finish()) })
		r.afterGrantMu.Unlock()
		return nil
	}
	return finish()
}

// gateRule reports whether rule obj stands over its namespaces this sweep
// (valid, active, in a trusted namespace, every manager and the namespaces
// listed), and else the decision about the rule itself.
func (s *Sweeper) gateRule(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured) (policy.Manager, decide.Decision, bool) {
	e := report.Entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), Rule: true}
	m, problems := policy.Parse(obj)
	switch {
	case m.Deactivated:
		return m, decide.Untouched(m, e, report.StateDeactivated, "spec.deactivated is true: the rule is paused"), false
	case len(problems) > 0:
		return m, decide.Decision{Manager: m, Entry: decide.Invalid(e, problems)}, false
	case !slices.Contains(s.cfg.TrustedNamespaces, m.Namespace):
		e.State, e.Message = report.StateForbidden, fmt.Sprintf("a rule may only live in a trusted namespace (%s), not %s",
			strings.Join(s.cfg.TrustedNamespaces, ", "), m.Namespace)
		return m, decide.Decision{Manager: m, Entry: e}, false
	case r.rulesBlocked != "":
		return m, decide.Untouched(m, e, report.StateDeferred, r.rulesBlocked), false
	}
	if _, err := s.namespaces(ctx, r); err != nil {
		return m, decide.Decision{Manager: m, Entry: decide.Failed(e, err), Untouched: true}, false
	}
	return m, decide.Decision{}, true
}

// ruleRun is one rule's handling in one sweep: its namespaces of this
// shard (pairs), and the entry of each.
type ruleRun struct {
	s    *Sweeper
	r    *sweepRun
	rule *policy.Manager
	// base is the rule's entry, which each pair's starts from.
	base report.Entry
	// key is the rule's status.PairAnnotation, legacy its legacy one.
	key, legacy string
	// ruleHolds are the rule's own hold and wake, judged once: one ignored
	// is reported on the rule (ruleHoldIgnored), not on every namespace.
	ruleHolds       []decide.Hold
	ruleHoldIgnored string
	// failedLatest names the namespaces whose failure the rule's status
	// lists, told already; removed, when the rule's latest actions last
	// removed a namespace of each name (one made since came back).
	failedLatest map[string]bool
	removed      map[string]time.Time
	tally        *tell.RuleTally
	pairs        []cluster.Namespace
	entries      []report.Entry
	// terminating are the namespaces the rule matches but for being
	// terminating, when it deletes and this shard owns it: stuck, they get
	// an entry. owner: this shard owns the rule.
	terminating []cluster.Namespace
	owner       bool
	// index is the pods index the pairs were screened with, if they were,
	// and unconfirmed marks those it let pass; perNamespace checks one
	// namespace by itself.
	index        *probe.Index
	unconfirmed  []bool
	perNamespace probe.Check
	// offered: a pair was offered a place under --max-actions.
	offered atomic.Bool
}

func (s *Sweeper) newRuleRun(r *sweepRun, obj *unstructured.Unstructured, m policy.Manager, stored status.Status) *ruleRun {
	ru := &ruleRun{s: s, r: r, rule: &m, key: status.PairAnnotation(m.UID), legacy: status.LegacyPairAnnotation(m.UID), tally: &tell.RuleTally{}, failedLatest: map[string]bool{},
		removed: map[string]time.Time{}, base: report.Entry{Namespace: m.Namespace, Name: m.Name, Rule: true}}
	var ignored []string
	for _, h := range []decide.Hold{{On: "rule " + m.Namespace + "/" + m.Name, Value: obj.GetAnnotations()[status.HoldAnnotation]},
		decide.Wake("rule "+m.Namespace+"/"+m.Name, obj.GetAnnotations()[status.WakeAnnotation])} {
		if why := decide.HoldsAt([]decide.Hold{h}, r.now, s.cfg.MaxHold).Ignored; why != "" {
			ignored = append(ignored, why)
		} else if h.Value != "" {
			ru.ruleHolds = append(ru.ruleHolds, h)
		}
	}
	ru.ruleHoldIgnored = strings.Join(ignored, "; ")
	if stored.Rule != nil {
		for _, a := range stored.Rule.Latest {
			switch {
			case a.Result == report.ResultFailed:
				ru.failedLatest[a.Namespace] = true
			case a.Result == report.ResultSucceeded && policy.ActionKindOf(a.Action).RemovesTarget() && a.Time.After(ru.removed[a.Namespace]):
				ru.removed[a.Namespace] = a.Time
			}
		}
	}
	return ru
}

// match keeps the rule's pairs of this shard, and returns the entries of
// the governed ones (shielded by an active, valid manager of their own,
// unless the rule enforces) and how many namespaces it matches in all. A rule never
// matches a protected namespace, a trusted one (where managers and rules
// live, its own included), or one being deleted, but where its record says
// a DELETE got no answer, to be confirmed.
func (ru *ruleRun) match(namespaces map[string]cluster.Namespace) ([]report.Entry, int) {
	s, m := ru.s, ru.rule
	var governed []report.Entry
	matched := 0
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		ns := namespaces[name]
		if slices.Contains(s.cfg.ProtectedNamespaces, name) || slices.Contains(s.cfg.TrustedNamespaces, name) || !m.Rule.Matches(name, ns.Labels) {
			continue
		}
		if record, _ := record.Of(ns, ru.key, ru.legacy); ns.Terminating && !lostDelete(record) {
			// The shard that owns the rule tells them all, in its status.
			if deletes(*m) && ru.owner {
				ru.terminating = append(ru.terminating, ns)
			}
			continue
		}
		matched++
		if !s.ours(types.UID(string(m.UID) + "/" + string(ns.UID))) {
			continue
		}
		if manager := ru.r.governed.Shielding(name); manager != "" && !m.Rule.Enforce {
			g := ru.base
			g.Target, g.State, g.Message = name, report.StateGoverned, fmt.Sprintf("manager %s aims at namespace %s and governs it alone", manager, name)
			governed = append(governed, g)
			continue
		}
		ru.pairs = append(ru.pairs, ns)
	}
	// One array for the governed entries, the pairs' and the stuck
	// namespaces' (see handleRule's finish); entries holds the pairs'.
	all := make([]report.Entry, len(governed)+len(ru.pairs), len(governed)+len(ru.pairs)+len(ru.terminating))
	copy(all, governed)
	ru.entries = all[len(governed) : len(governed)+len(ru.pairs)]
	return all[:len(governed)], matched
}

// stuck returns the entries of the namespaces the rule would delete that
// are stuck in Terminating (see probe.Stuck); those terminating for less
// than --stuck-after get none, as before.
func (ru *ruleRun) stuck(ctx context.Context) []report.Entry {
	var entries []report.Entry
	for _, ns := range ru.terminating {
		e := ru.base
		e.Target = ns.Name
		if e, unread := ru.r.eval.Terminating(ctx, e, ns, fmt.Sprintf("namespace %s is terminating", ns.Name)); e.Stuck != nil || unread {
			entries = append(entries, e)
		}
	}
	return entries
}

// deletes reports whether m has a DELETE policy.
func deletes(m policy.Manager) bool {
	return slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return p.Action.Kind().RemovesTarget() })
}

// lostDelete reports whether a pair's record says a DELETE got no answer.
func lostDelete(raw string) bool {
	if raw == "" {
		return false
	}
	last := status.DecodePair(raw).LastAction
	return last != nil && last.Uncertain && policy.ActionKindOf(last.Action).RemovesTarget()
}

// pairWork is a pair with something to carry out.
type pairWork struct {
	rec   *record.Pair
	d     decide.Decision
	index int
}

// entry is the entry of the pair of namespace ns as its evaluation starts
// it: the rule's, its target, and when the namespace came back, made
// again after the rule removed a namespace of its name.
func (ru *ruleRun) entry(ns cluster.Namespace) report.Entry {
	e := ru.base
	e.Target = ns.Name
	if removed, ok := ru.removed[ns.Name]; ok && ns.Created.After(removed) {
		e.CameBack = &report.CameBack{Deleted: removed.UTC(), Created: ns.Created.UTC()}
	}
	return e
}

// evaluate evaluates pair i with check, and returns its work, if any: a
// pair without is final, its entry kept and told.
func (ru *ruleRun) evaluate(ctx context.Context, i int, check probe.Check) (pairWork, bool) {
	e := ru.entry(ru.pairs[i])
	if ru.r.stop.Err() != nil {
		ru.entries[i] = execute.NotReached(e, "it got to this namespace")
		return pairWork{}, false
	}
	ns := ru.pairs[i]
	rc, at := record.Of(ns, ru.key, ru.legacy)
	rec := &record.Pair{Env: ru.s.env, Rule: ru.rule, Key: ru.key, Legacy: ru.legacy, At: at, Namespace: ns, Now: ru.r.now, Stored: status.DecodePair(rc),
		ToldFailure: ru.failedLatest[ns.Name], Events: ru.tally}
	d := ru.r.eval.EvaluatePair(ctx, *rec.Rule, rec.Namespace, rec.Stored, e, decide.Check(check), ru.ruleHolds...)
	if d.Plan == nil && !record.NeedsRecord(d.Entry, d.Checks, rec.Stored.Progress) {
		ru.entries[i] = ru.r.exec.CarryOut(ctx, rec, d)
		return pairWork{}, false
	}
	return pairWork{rec: rec, d: d, index: i}, true
}

// PairChunk is how many pairs are evaluated before they are acted on.
const PairChunk = 256

// screen returns the pairs to evaluate in their chunk, in order. Past
// PodIndexAfter pairs, a rule with PODS_SUCCEED first screens every pair
// with the sweep's index of pods that have not succeeded: that settles the
// pairs it finds such a pod in, and those with nothing to carry out. The
// others are evaluated again in their chunk, on reads made then (see
// probe.Confirmer): the index cannot let a check pass, as a pod may have started
// since it was listed.
func (ru *ruleRun) screen(ctx context.Context) []int {
	r := ru.r
	// So many PODS_FAILED checks would pass PodIndexAfter anyway: the index
	// of failed pods and Jobs answers them from the first.
	ru.perNamespace = r.pods.Checks(len(ru.pairs) > probe.PodIndexAfter)
	if len(ru.pairs) > probe.PodIndexAfter && checksPods(*ru.rule) {
		ru.index, _ = r.pods.Pending(ctx) // without it, every pair is checked in its chunk
	}
	work := make([]bool, len(ru.pairs))
	if ru.index != nil {
		ru.unconfirmed = make([]bool, len(ru.pairs))
		r.bounded(len(ru.pairs), func(i int) {
			_, work[i] = ru.evaluate(ctx, i, ru.index.Answers(ru.perNamespace, &ru.unconfirmed[i]))
		})
	}
	// A pair screened with nothing to carry out is not evaluated again.
	var pending []int
	for i, w := range work {
		if w || ru.index == nil {
			pending = append(pending, i)
		}
	}
	return pending
}

// actInChunks evaluates the pending pairs, then carries out what that
// decided, a chunk of PairChunk at a time: evaluating a chunk whole first
// keeps pods checks, consistent reads that wait for the API server's pods
// cache to catch up with every write before them, away from this sweep's
// writes; chunks keep the time between a pair's check and its action short.
func (ru *ruleRun) actInChunks(ctx context.Context, pending []int) {
	r := ru.r
	confirm := r.pods.Confirmer(*ru.rule, ru.index, ru.perNamespace)
	for first := 0; first < len(pending); first += PairChunk {
		chunk := pending[first:min(first+PairChunk, len(pending))]
		if r.stop.Err() != nil {
			for _, i := range pending[first:] {
				ru.entries[i] = execute.NotReached(report.Entry{Namespace: ru.base.Namespace, Name: ru.base.Name, Rule: true, Target: ru.pairs[i].Name}, "it got to this namespace")
			}
			return
		}
		names, again := make([]string, 0, len(chunk)), 0
		for _, i := range chunk {
			names = append(names, ru.pairs[i].Name)
			if ru.unconfirmed != nil && ru.unconfirmed[i] {
				again++
			}
		}
		check := confirm.Checks(ctx, names, again)
		var (
			mu   sync.Mutex
			todo []pairWork
		)
		r.bounded(len(chunk), func(j int) {
			if w, work := ru.evaluate(ctx, chunk[j], check); work {
				mu.Lock()
				todo = append(todo, w)
				mu.Unlock()
			}
		})
		r.bounded(len(todo), func(k int) {
			w := todo[k]
			todo[k] = pairWork{} // what is carried out is not kept twice
			again := func() decide.Decision {
				// One namespace by itself.
				return r.eval.EvaluatePair(ctx, *w.rec.Rule, w.rec.Namespace, w.rec.Stored, ru.entry(w.rec.Namespace), decide.Check(ru.perNamespace), ru.ruleHolds...)
			}
			if r.carry(ctx, subject{rec: w.rec, again: again, done: func(e report.Entry) { ru.entries[w.index] = e }}, w.d) {
				ru.offered.Store(true)
			}
		})
	}
}

// bounded calls fn(0) … fn(n-1) and waits for them, Concurrency at a time
// for all the rules of the sweep together (pairSlots).
//
// At most Concurrency goroutines take the calls in turn, rather than one
// each: a goroutine's stack grows to what a pair's evaluation needs once,
// not for each of 10,000 pairs (a CPU profile of make bench's rule no-op
// sweep spent a tenth of its time growing new stacks).
func (r *sweepRun) bounded(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, cap(r.pairSlots)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				r.slot(func() { fn(i) })
			}
		})
	}
	wg.Wait()
}

// slot calls fn holding one of the slots the rules share.
func (r *sweepRun) slot(fn func()) {
	r.pairSlots <- struct{}{}
	defer func() { <-r.pairSlots }()
	fn()
}

// readsAhead reports, as far as rule l's last status tells, whether it is
// to be screened with the sweep's pods index (see screen: it had more than
// PodIndexAfter namespaces to evaluate, governed ones aside, and has a
// PODS_SUCCEED policy), and whether it reads the activity of more than
// ActivityIndexAfter namespaces (it has an IDLE policy; its traffic too),
// either only while it stands, and the rule. The sweep then reads those
// beside the namespaces rather than after them.
func (s *Sweeper) readsAhead(r *sweepRun, l listpage.Listed) (podsIndex, activityIndex bool, m policy.Manager) {
	evaluated := ruleEvaluated(r.status.Read(l), s.cfg.ShardCount)
	if evaluated <= min(probe.PodIndexAfter, probe.ActivityIndexAfter) {
		return false, false, m
	}
	m, problems := policy.Parse(l.Obj)
	stands := len(problems) == 0 && !m.Deactivated && slices.Contains(s.cfg.TrustedNamespaces, m.Namespace)
	return stands && evaluated > probe.PodIndexAfter && checksPods(m), stands && evaluated > probe.ActivityIndexAfter && m.ReadsActivity(), m
}

// weighsOwners reports whether rule l, as far as its last status tells,
// weighs the owners of namespaces it evaluates (OWNER_GONE) while it
// stands: the sweep then lists the owner kinds that create namespaces
// beside the namespaces (see probe.Owners.Prefetch) rather than after.
func weighsOwners(cfg Config, r *sweepRun, l listpage.Listed) bool {
	if ruleEvaluated(r.status.Read(l), cfg.ShardCount) == 0 {
		return false
	}
	m, problems := policy.Parse(l.Obj)
	return len(problems) == 0 && !m.Deactivated && slices.Contains(cfg.TrustedNamespaces, m.Namespace) &&
		m.Needs(func(e policy.Evidence) bool { return e.Owner })
}

// sleepsAhead reports, as far as a rule's stored status tells, whether more
// than probe.AwakeIndexAfter of its namespaces were asleep: the sweep then
// asks what is awake in each from its index, from the first.
func sleepsAhead(stored status.Status) bool {
	return stored.Rule != nil && stored.Rule.States[report.StateAsleep] > probe.AwakeIndexAfter
}

// ruleEvaluated is how many namespaces a rule whose status is stored had to
// evaluate (governed ones aside) in each of shards, as that status tells; 0
// without one.
func ruleEvaluated(stored status.Status, shards int) int {
	if stored.Rule == nil {
		return 0
	}
	evaluated := stored.Rule.Matched / max(1, shards)
	if stored.Rule.States != nil {
		evaluated = 0
		for state, n := range stored.Rule.States {
			if state != report.StateGoverned {
				evaluated += n
			}
		}
	}
	return evaluated
}

// checksPods reports whether a condition of m checks for pods that have
// not succeeded (PODS_SUCCEED's), which the sweep's index cannot let pass.
func checksPods(m policy.Manager) bool { return m.ChecksPods(policy.PodsNotSucceeded) }

// summarize writes the rule's status when what it summarizes changed: the
// namespaces matched, this sweep's pairs by state, the latest actions. A
// failure is logged: the next sweep writes it again.
func (s *Sweeper) summarize(ctx context.Context, own *record.Manager, m policy.Manager, matched int, entries []report.Entry, holdIgnored string) {
	stored := own.Stored
	sum := status.RuleSummary{Matched: matched, States: map[report.State]int{}}
	var due *time.Time
	var acted []status.PairAction
	for _, e := range entries {
		sum.States[e.State]++
		// A waiting namespace's; not a failed WEBHOOK's next attempt, which
		// would rewrite the rule at every failure.
		if e.State == report.StateWaiting && e.Due != nil && (due == nil || e.Due.Before(*due)) {
			due = e.Due
		}
		if result := report.ResultOf(e.State); (e.State == report.StateFired || e.State == report.StateFailed) && e.Policy != "" {
			acted = append(acted, status.PairAction{Namespace: e.Target, Policy: e.Policy, Action: e.Action, Result: result, Time: own.Now.UTC(), Reclaimed: e.Reclaimed})
		}
	}
	if len(sum.States) == 0 {
		sum.States = nil
	}
	if stored.Rule != nil {
		// A failure already listed stays as it was listed: a pair failing
		// sweep after sweep rewrites nothing.
		acted = slices.DeleteFunc(acted, func(a status.PairAction) bool {
			return a.Result == report.ResultFailed && slices.ContainsFunc(stored.Rule.Latest, func(b status.PairAction) bool {
				return b.Namespace == a.Namespace && b.Policy == a.Policy && b.Action == a.Action && b.Result == a.Result
			})
		})
		acted = append(acted, stored.Rule.Latest...)
	}
	slices.SortStableFunc(acted, func(a, b status.PairAction) int { return b.Time.Compare(a.Time) })
	sum.Latest = acted[:min(len(acted), status.MaxLatest)]
	newlyStuck := keepStuck(&sum, entries, stored.Rule)

	e := report.Entry{Namespace: m.Namespace, Name: m.Name, State: status.StateWatching, Due: due,
		Message: fmt.Sprintf("matches %d namespace(s)%s", matched, byState(sum.States)), HoldIgnored: holdIgnored}
	if holdIgnored != "" {
		e.Message += "; hold ignored: " + holdIgnored
	}
	if err := own.SaveSummary(ctx, e, sum); err != nil {
		s.log.Warn("rule status not written", "manager", m.Namespace+"/"+m.Name, "error", err.Error())
		return
	}
	own.Sink().Tell(ctx, e, own.Prior(), false, true)
	if len(newlyStuck) > 0 {
		s.eventsOn(own.Obj, own.Now).Emit(ctx, corev1.EventTypeWarning, tell.NamespaceStuck, "Evaluate", fmt.Sprintf("%d namespace(s) newly stuck in Terminating: %s; status.rule.stuck says why, nsman explain NAMESPACE what holds each",
			len(newlyStuck), tell.FirstTen(newlyStuck)))
	}
}

// keepStuck lists in sum the stuck namespaces of entries, the first
// maxLatest by name, each as stored while its cause is the same (or it
// could not be read this sweep), and returns those listed whose cause is
// new, with why: they get an Event. A namespace past the first maxLatest
// is counted in the states, and told once it is listed.
func keepStuck(sum *status.RuleSummary, entries []report.Entry, stored *status.RuleSummary) []string {
	was := map[string]*report.Stuck{}
	if stored != nil {
		for i := range stored.Stuck {
			was[stored.Stuck[i].Namespace] = &stored.Stuck[i].Stuck
		}
	}
	var stuck []status.StuckNamespace
	for _, e := range entries {
		switch {
		case e.Stuck != nil:
			stuck = append(stuck, status.StuckNamespace{Namespace: e.Target, Stuck: *e.Stuck})
		case e.State == report.StateTargetTerminating && was[e.Target] != nil:
			// Not read this sweep: as stored.
			stuck = append(stuck, status.StuckNamespace{Namespace: e.Target, Stuck: *was[e.Target]})
		}
	}
	slices.SortFunc(stuck, func(a, b status.StuckNamespace) int { return cmp.Compare(a.Namespace, b.Namespace) })
	var told []string
	for _, n := range stuck[:min(len(stuck), status.MaxLatest)] {
		if was[n.Namespace].Cause() != n.Cause() {
			told = append(told, n.Namespace+" ("+n.Cause()+")")
		}
		sum.Stuck = append(sum.Stuck, status.StuckNamespace{Namespace: n.Namespace, Stuck: *status.SameCause(was[n.Namespace], &n.Stuck)})
	}
	return told
}

// byState says ": 3 waiting, 1 done" for counts by state, in a stable order.
func byState(states map[report.State]int) string {
	if len(states) == 0 {
		return ""
	}
	keys := slices.SortedFunc(maps.Keys(states), func(a, b report.State) int { return cmp.Compare(a, b) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", states[k], k))
	}
	return ": " + strings.Join(parts, ", ")
}
