package sweep

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/nsman/nsman/policy"
)

// A rule is a manager with a namespaceSelector or namePatterns instead of
// spec.namespace: it stands over every namespace those match, and each
// (rule, namespace) pair is evaluated and acted on as a single-target
// manager is, once per spec of the rule (a change of spec.deactivated alone
// does not count). A pair's record (claim, outcome,
// minChecks progress) is an annotation on the namespace, so that it goes
// with the namespace and a namespace recreated under the same name starts
// afresh; the rule's own status only summarizes, within a fixed size.

// PairAnnotationPrefix, followed by a rule's UID, is the annotation on a
// namespace that holds that rule's record of the namespace, as JSON
// (PairStatus). It is written only when there is something to keep: a
// claim, an action's outcome, minChecks progress.
const PairAnnotationPrefix = "nsman.k8s.consol.de/rule-"

// maxLatest bounds the latest actions a rule's status lists.
const maxLatest = 10

// StateWatching is never in a report: it is the state a rule's status
// shows while it stands over the namespaces it matches.
const StateWatching State = "watching"

// PairStatus is a rule's record of one namespace.
type PairStatus struct {
	// Rule names the rule, namespace/name, for whoever reads the namespace.
	Rule string `json:"rule"`
	// ObservedGeneration is the rule generation LastAction was for, and
	// Spec identifies that generation's spec apart from spec.deactivated
	// (policy.Manager.Arming): pausing and resuming a rule re-arms nothing.
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	Spec               string `json:"spec,omitempty"`
	// Claim is set while a sweep acts on the pair.
	Claim *Claim `json:"claim,omitempty"`
	// LastAction is the outcome of the pair's latest action.
	LastAction *LastAction `json:"lastAction,omitempty"`
	// Checks is the pair's minChecks progress, by policy name.
	Checks map[string]policy.CheckState `json:"checks,omitempty"`
	// Fired lists the stages (policies that are not final) that fired.
	Fired []FiredPolicy `json:"fired,omitempty"`
	// IgnoredHold says why holds on the namespace or the rule were
	// ignored, while they are: the rule's Warning Event names it once.
	IgnoredHold string `json:"ignoredHold,omitempty"`
	// Written is when a record that holds no other time (minChecks progress
	// and the rest aside) was written: it dates the record, for a rule
	// that is gone (see removeStaleRecords).
	Written *time.Time `json:"written,omitempty"`
}

// done reports whether a final policy's action succeeded for this
// generation of m, or for one that differs from it in spec.deactivated
// alone.
func (p PairStatus) done(m policy.Manager) bool {
	if p.LastAction == nil || p.LastAction.Result != ResultSucceeded || !(p.ObservedGeneration == m.Generation || p.Spec != "" && p.Spec == m.Arming) {
		return false
	}
	i := policyIndex(m, p.LastAction.Policy)
	return i >= 0 && m.Policies[i].Final
}

// RuleSummary is what a rule's status says about the namespaces it
// matches. Its size does not grow with their number.
type RuleSummary struct {
	// Matched counts the namespaces the rule matches, those governed by a
	// single-target manager included.
	Matched int `json:"matched"`
	// States counts the matched namespaces by the state the last sweep
	// found them in. With --shard-count above 1, only the pairs of the
	// shard that owns the rule are counted.
	States map[State]int `json:"states,omitempty"`
	// Latest lists the rule's latest actions, newest first, at most 10.
	Latest []PairAction `json:"latest,omitempty"`
}

// PairAction is one action a rule took on one namespace.
type PairAction struct {
	Namespace string    `json:"namespace"`
	Policy    string    `json:"policy"`
	Action    string    `json:"action"`
	Result    string    `json:"result"`
	Time      time.Time `json:"time"`
}

// isRule reports whether a listed manager is a rule: its spec has a
// namespaceSelector or namePatterns. Parse judges whether it is a valid one.
func isRule(obj *unstructured.Unstructured) bool {
	spec, _ := obj.Object["spec"].(map[string]any)
	return spec["namespaceSelector"] != nil || spec["namePatterns"] != nil
}

// aimsAt is the namespace a single-target manager aims at, valid or not:
// spec.namespace when it is a non-empty string, else its name.
func aimsAt(obj *unstructured.Unstructured) string {
	spec, _ := obj.Object["spec"].(map[string]any)
	if ns, _ := spec["namespace"].(string); ns != "" {
		return ns
	}
	return obj.GetName()
}

// PairIdempotencyKey identifies one firing of one policy of one rule
// generation on one namespace: a sweep completing another's claim sends the
// same key, and a namespace recreated under the same name gets a new one.
func PairIdempotencyKey(m policy.Manager, policyName string, namespaceUID types.UID) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s/%s", m.UID, m.Generation, policyName, namespaceUID)))
	return hex.EncodeToString(sum[:16])
}

// firingKey identifies the firing of p's policy by m: a manager's
// IdempotencyKey, or for a rule the PairIdempotencyKey of the generation the
// plan is for (the claim's, completing one) and the target namespace.
func firingKey(m policy.Manager, p *plan) string {
	if m.Rule == nil {
		return IdempotencyKey(m, p.policy.Name)
	}
	m.Generation = cmp.Or(p.generation, m.Generation)
	return PairIdempotencyKey(m, p.policy.Name, p.target.uid)
}

// handleRule evaluates a rule on every namespace it matches and carries out
// what that decided, returning one entry per pair of this shard (or one for
// the rule itself when it does not stand: deactivated, invalid, forbidden,
// deferred, or failed to list the namespaces).
// The rule's status is summarized by the shard that owns the rule.
func (s *Sweeper) handleRule(ctx context.Context, r *sweepRun, l listed) []Entry {
	obj := l.obj
	stored := r.store.read(l)
	owner := ShardOf(obj.GetUID(), s.cfg.ShardCount) == s.cfg.ShardIndex
	e := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), Rule: true}
	m, problems := policy.Parse(obj)
	ruleEntry := func(e Entry) []Entry {
		if !owner {
			return nil
		}
		return []Entry{e}
	}
	switch {
	case m.Deactivated:
		e.State, e.Message = StateDeactivated, "spec.deactivated is true: the rule is paused"
		return ruleEntry(e)
	case len(problems) > 0:
		for _, p := range problems {
			e.Problems = append(e.Problems, p.Error())
		}
		e.State, e.Message = StateInvalid, fmt.Sprintf("%d problem(s); first: %s", len(problems), problems[0].Error())
		return ruleEntry(s.recordOwned(ctx, r, obj, stored, e, owner))
	case !slices.Contains(s.cfg.TrustedNamespaces, m.Namespace):
		e.State, e.Message = StateForbidden, fmt.Sprintf("a rule may only live in a trusted namespace (%s), not %s",
			strings.Join(s.cfg.TrustedNamespaces, ", "), m.Namespace)
		return ruleEntry(s.recordOwned(ctx, r, obj, stored, e, owner))
	case r.rulesBlocked != "":
		e.State, e.Message = StateDeferred, r.rulesBlocked
		return ruleEntry(e)
	}
	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return ruleEntry(failed(e, err))
	}

	type pair struct {
		name string
		ns   namespaceInfo
	}
	var pairs []pair
	var entries []Entry
	matched := 0
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		ns := namespaces[name]
		// A rule never matches a protected namespace, a trusted one (where
		// managers and rules live, its own included), or one being deleted.
		if ns.terminating || slices.Contains(s.cfg.ProtectedNamespaces, name) || slices.Contains(s.cfg.TrustedNamespaces, name) || !m.Rule.Matches(name, ns.labels) {
			continue
		}
		matched++
		if ShardOf(types.UID(string(m.UID)+"/"+string(ns.uid)), s.cfg.ShardCount) != s.cfg.ShardIndex {
			continue
		}
		if manager, ok := r.governed[name]; ok {
			g := e
			g.Target, g.State, g.Message = name, StateGoverned, fmt.Sprintf("manager %s aims at namespace %s and governs it alone", manager, name)
			entries = append(entries, g)
			continue
		}
		pairs = append(pairs, pair{name, ns})
	}

	// A pair is evaluated, then carried out, in chunks of PairChunk: a chunk
	// is evaluated whole, then acted on. Evaluating first keeps pods checks
	// away from this sweep's writes: a pods check is a consistent read,
	// which waits for the API server's pods cache to catch up with every
	// write before it (about 40 ms each instead of 5 to 15, BENCHMARKS.md);
	// chunks keep the time between a pair's check and its action short. A
	// pair whose evaluation is final (waiting with nothing to keep, done,
	// busy) is reported as evaluated; only the others are carried out.
	//
	// Past PodIndexAfter pairs, a rule with PODS_SUCCEED first screens every
	// pair with the sweep's index of pods that have not succeeded: that
	// settles the pairs it finds such a pod in, and those with nothing to
	// carry out. The index cannot let a check pass (a pod may have started
	// since it was listed): the pairs it let pass that have something to
	// carry out are evaluated again in their chunk, on reads made then (see
	// confirmer): 1,000 due namespaces cost 4 pairs of lists rather than
	// 2,000 requests (BENCHMARKS.md).
	base := len(entries)
	entries = slices.Grow(entries, len(pairs))[:base+len(pairs)]
	failedBefore, newlyIgnored := make([]bool, len(pairs)), make([]bool, len(pairs))
	key := PairAnnotationPrefix + string(m.UID)
	// The rule's own hold is judged once, for the rule: one ignored is
	// reported on the rule, not recorded on every namespace it matches.
	ruleHold := obj.GetAnnotations()[HoldAnnotation]
	ruleHoldIgnored := holdsAt([]hold{{on: "rule " + m.Namespace + "/" + m.Name, value: ruleHold}}, r.now, s.cfg.MaxHold).ignored
	if ruleHoldIgnored != "" {
		ruleHold = ""
	}
	failedLatest := map[string]bool{}
	if stored.Rule != nil {
		for _, a := range stored.Rule.Latest {
			if a.Result == ResultFailed {
				failedLatest[a.Namespace] = true
			}
		}
	}
	// evaluate evaluates pair i with check: the pair's final entry is kept,
	// and its work returned when there is something to carry out.
	evaluate := func(i int, check podsCheck) (pairWork, bool) {
		if r.stop.Err() != nil {
			entries[base+i] = notReachedPair(e, pairs[i].name)
			return pairWork{}, false
		}
		w := s.evaluatePairOf(ctx, r, m, e, key, pairs[i].name, pairs[i].ns, check, ruleHold)
		failedBefore[i] = w.stored.LastAction != nil && w.stored.LastAction.Result == ResultFailed || failedLatest[pairs[i].name]
		newlyIgnored[i] = w.d.entry.HoldIgnored != "" && w.d.entry.HoldIgnored != w.stored.IgnoredHold
		entries[base+i] = w.d.entry
		if w.d.plan == nil && !needsRecord(w) {
			return pairWork{}, false
		}
		w.index, w.d.manager = base+i, policy.Manager{}
		return w, true
	}

	// pending lists the pairs to evaluate in their chunk, in order;
	// unconfirmed marks those the screen let a check pass.
	pending := make([]int, 0, len(pairs))
	var screened *podIndex
	var unconfirmed []bool
	if len(pairs) > PodIndexAfter && checksPods(m) {
		if x, err := s.podIndex(ctx, r); err == nil { // without it, every pair is checked in its chunk
			screened = x
		}
	}
	// So many PODS_FAILED checks would pass PodIndexAfter anyway: the index
	// of failed pods and Jobs answers them from the first.
	perNamespace := s.checks(r, len(pairs) > PodIndexAfter)
	if screened != nil {
		unconfirmed = make([]bool, len(pairs))
		work := make([]bool, len(pairs))
		r.bounded(len(pairs), func(i int) {
			_, work[i] = evaluate(i, screened.answers(perNamespace, &unconfirmed[i]))
		})
		// A pair with nothing to carry out is not evaluated again: whatever
		// a fresh read says, nothing is written or done for it.
		for i := range pairs {
			if work[i] {
				pending = append(pending, i)
			}
		}
	} else {
		for i := range pairs {
			pending = append(pending, i)
		}
	}
	confirm := s.confirmer(m, screened, perNamespace)
	for first := 0; first < len(pending); first += PairChunk {
		if r.stop.Err() != nil {
			for _, i := range pending[first:] {
				entries[base+i] = notReachedPair(e, pairs[i].name)
			}
			break
		}
		chunk := pending[first:min(first+PairChunk, len(pending))]
		names, again := make([]string, 0, len(chunk)), 0
		for _, i := range chunk {
			names = append(names, pairs[i].name)
			if unconfirmed != nil && unconfirmed[i] {
				again++
			}
		}
		check := confirm.checks(ctx, names, again)
		var (
			mu   sync.Mutex
			todo []pairWork
		)
		r.bounded(len(chunk), func(j int) {
			if w, work := evaluate(chunk[j], check); work {
				mu.Lock()
				todo = append(todo, w)
				mu.Unlock()
			}
		})
		r.bounded(len(todo), func(k int) {
			w := todo[k]
			todo[k] = pairWork{} // what is carried out is not kept twice
			entries[w.index] = s.carryOutPair(ctx, r, m, w)
		})
	}
	var fired, failedNow, ignored []string
	for i, e := range entries[base:] {
		if newlyIgnored[i] {
			ignored = append(ignored, e.Target+": "+e.HoldIgnored)
		}
		switch {
		case e.State == StateFired:
			fired = append(fired, e.Target)
		case e.State == StateFailed && !failedBefore[i]:
			failedNow = append(failedNow, e.Target+": "+e.Message)
		}
	}

	s.announceRule(ctx, r, obj, fired, failedNow)
	if len(ignored) > 0 {
		s.emit(ctx, r, obj, corev1.EventTypeWarning, holdIgnored, "Evaluate", fmt.Sprintf("holds ignored on %d namespace(s): %s", len(ignored), listed10(ignored)))
	}
	if owner {
		s.summarize(ctx, r, obj, m, stored, matched, entries, ruleHoldIgnored)
	}
	return entries
}

// indexAhead reports whether rule l is to be screened with the sweep's
// pods index (see handleRule), as far as its last status tells: it had more
// than PodIndexAfter namespaces to evaluate (those of the shard owning it,
// governed ones aside), stands (valid, in a trusted namespace, not paused),
// and has a PODS_SUCCEED policy. The sweep then lists the index beside the
// namespaces rather than after them; should the rule match fewer
// namespaces now, the index was one paged list spent for nothing.
func (s *Sweeper) indexAhead(r *sweepRun, l listed) bool {
	stored := r.store.read(l)
	if stored.Rule == nil {
		return false
	}
	evaluated := stored.Rule.Matched / max(1, s.cfg.ShardCount)
	if stored.Rule.States != nil {
		evaluated = 0
		for state, n := range stored.Rule.States {
			if state != StateGoverned {
				evaluated += n
			}
		}
	}
	if evaluated <= PodIndexAfter {
		return false
	}
	m, problems := policy.Parse(l.obj)
	return len(problems) == 0 && !m.Deactivated && slices.Contains(s.cfg.TrustedNamespaces, m.Namespace) && checksPods(m)
}

// checksPods reports whether m has a PODS_SUCCEED policy.
func checksPods(m policy.Manager) bool {
	return slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return p.Condition.Type == policy.ConditionPodsSucceed })
}

// recordOwned records a rule's own final entry, when this shard owns the
// rule.
func (s *Sweeper) recordOwned(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Status, e Entry, owner bool) Entry {
	if !owner {
		return e
	}
	return s.record(ctx, r, obj, stored, e, nil)
}

func notReachedPair(e Entry, namespace string) Entry {
	e.Target, e.State, e.Message = namespace, StateDeferred, "the sweep was interrupted before it got to this namespace"
	return e
}

// pairWork is one pair as evaluated: its namespace, its record, the
// decision, and where its entry goes.
type pairWork struct {
	ns     namespaceInfo
	key    string
	stored PairStatus
	d      decision
	index  int
}

// needsRecord reports whether a waiting pair has something to record:
// minChecks progress, or a change in the holds it ignores. A pair that
// failed to evaluate (a pods check that got no answer) keeps what it had.
func needsRecord(w pairWork) bool {
	if w.d.plan != nil || w.d.entry.State != StateWaiting {
		return false
	}
	if w.d.entry.HoldIgnored != w.stored.IgnoredHold {
		return true
	}
	if len(w.d.checks) == 0 && len(w.stored.Checks) == 0 {
		return false
	}
	return !maps.EqualFunc(w.d.checks, w.stored.Checks, func(a, b policy.CheckState) bool { return a == b })
}

// PairChunk is how many of a rule's pairs are evaluated before they are
// acted on.
const PairChunk = 256

// bounded calls fn(0) … fn(n-1) and waits for them, taking for each call
// one of the sweep's pair slots: Concurrency at a time for all the rules
// of the sweep together.
func (r *sweepRun) bounded(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		r.pairSlots <- struct{}{}
		wg.Go(func() {
			defer func() { <-r.pairSlots }()
			fn(i)
		})
	}
	wg.Wait()
}

// evaluatePairOf reads the rule's record on namespace name and evaluates
// the pair; it writes nothing.
func (s *Sweeper) evaluatePairOf(ctx context.Context, r *sweepRun, m policy.Manager, e Entry, key, name string, ns namespaceInfo, check podsCheck, ruleHold string) pairWork {
	w := pairWork{ns: ns, key: key}
	if raw := ns.pairs[w.key]; raw != "" {
		// Decoded apart from w, which would otherwise go to the heap for
		// every pair, record or not. A record that does not decode (edited
		// by hand) counts as absent.
		stored := new(PairStatus)
		if json.Unmarshal([]byte(raw), stored) == nil {
			w.stored = *stored
		}
	}
	e.Target = name
	w.d = s.evaluatePair(ctx, r, m, e, ns, w.stored, check, ruleHold)
	return w
}

// carryOutPair carries out a pair's decision: its plan, or the minChecks
// progress of a waiting pair.
func (s *Sweeper) carryOutPair(ctx context.Context, r *sweepRun, m policy.Manager, w pairWork) Entry {
	d, stored, name := w.d, w.stored, w.d.entry.Target
	switch {
	case d.plan != nil:
		return s.executePair(ctx, r, m, w.ns, w.key, stored, d)
	case d.untouched:
		return d.entry
	}
	// Waiting: only minChecks progress is kept; a pair with nothing to keep
	// costs no write.
	if !needsRecord(w) {
		return d.entry
	}
	next := stored
	next.Rule, next.Checks, next.IgnoredHold = m.Namespace+"/"+m.Name, d.checks, d.entry.HoldIgnored
	if next.lastTime().IsZero() {
		next.Written = timePtr(r.now)
	}
	if err := s.writePair(ctx, name, w.key, w.ns, next); err != nil {
		if changedSinceListed(err) {
			return busyPair(d.entry)
		}
		return failed(d.entry, fmt.Errorf("record minChecks progress on namespace %s: %w", name, err))
	}
	return d.entry
}

// changedSinceListed reports a pair's write refused because the namespace
// is not as listed any more: left to the next sweep.
func changedSinceListed(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || errors.Is(err, errPairChanged)
}

func busyPair(e Entry) Entry {
	e.State, e.Message = StateBusy, "namespace changed since this sweep listed it; left to the next sweep"
	return e
}

// evaluatePair decides what to do with one pair, as evaluate does for a
// manager; it writes nothing.
func (s *Sweeper) evaluatePair(ctx context.Context, r *sweepRun, m policy.Manager, e Entry, ns namespaceInfo, stored PairStatus, check podsCheck, ruleHold string) decision {
	if c := stored.Claim; c != nil {
		if s.clock().Before(c.Expires) {
			e.Policy, e.Action = c.Policy, c.Action
			e.State, e.Message = StateBusy, fmt.Sprintf("claimed by sweep %s until %s", c.Sweep, c.Expires.UTC().Format(time.RFC3339))
			return decision{manager: m, entry: e, untouched: true}
		}
		// A claim of this spec (a generation that differs in
		// spec.deactivated alone included) is completed, under the key of
		// the generation it was made for.
		if i := policyIndex(m, c.Policy); i >= 0 && (c.Generation == m.Generation || c.Spec != "" && c.Spec == m.Arming) {
			return s.planned(m, e, nil, plan{step: stepCompleteClaim, policy: m.Policies[i], generation: c.Generation,
				reason: "completing the expired claim of sweep " + c.Sweep, target: target{name: e.Target, uid: ns.uid}})
		}
	}
	if stored.done(m) {
		last := stored.LastAction
		e.Policy, e.Action = last.Policy, last.Action
		e.State, e.Message = StateDone, fmt.Sprintf("policy %q fired (%s) at %s; done until the rule changes", last.Policy, last.Action, last.Time.UTC().Format(time.RFC3339))
		return decision{manager: m, entry: e, untouched: true}
	}
	holds := []hold{{on: "namespace " + e.Target, value: ns.hold}, {on: "rule " + m.Namespace + "/" + m.Name, value: ruleHold}}
	return holdsAt(holds, r.now, s.cfg.MaxHold).apply(s.evaluatePolicies(ctx, r, m, e, ns, check, stored.Checks, firedIn(stored.Fired, m.Generation, m.Arming)))
}

// executePair carries out a pair's plan, as execute does a manager's: within
// the action cap, claimed on the namespace (conditional on the version
// listed), acted on, and recorded with a patch that first tests the claim
// is still this sweep's. A DELETE is not recorded: the record goes with the
// namespace, and its claim keeps other sweeps away until it is gone.
func (s *Sweeper) executePair(ctx context.Context, r *sweepRun, m policy.Manager, ns namespaceInfo, key string, stored PairStatus, d decision) Entry {
	p, e := d.plan, d.entry
	if r.stop.Err() != nil {
		return notReachedPair(e, p.target.name)
	}
	if max := s.cfg.MaxActions; max > 0 && r.actions.Add(1) > int64(max) {
		e.State, e.Message = StateDeferred, fmt.Sprintf("%s; deferred: --max-actions %d reached", p.reason, max)
		return e
	}
	claimed := stored
	claimed.Rule = m.Namespace + "/" + m.Name
	if p.policy.Final {
		claimed.Checks = nil
	}
	deadline := time.Now().Add(s.cfg.ClaimTTL - claimMargin)
	claimed.Claim = &Claim{Policy: p.policy.Name, Action: p.policy.Action.Type, Sweep: s.cfg.SweepID,
		Expires: s.clock().Add(s.cfg.ClaimTTL).UTC(), Generation: cmp.Or(p.generation, m.Generation), TargetUID: p.target.uid, Spec: m.Arming}
	if err := s.writePair(ctx, p.target.name, key, ns, claimed); err != nil {
		if changedSinceListed(err) {
			return busyPair(e)
		}
		return failed(e, fmt.Errorf("claim namespace %s: %w", p.target.name, err))
	}

	actCtx, cancel := context.WithDeadline(ctx, deadline)
	effects, err := s.apply(actCtx, m, p)
	cancel()
	e.Effects = effects
	defer s.notifyOutcome(ctx, r, m, p, effects, err, failedBefore(stored.LastAction, p))
	if err == nil && p.policy.Action.Type == policy.ActionDelete {
		return s.succeeded(e, p)
	}

	final := claimed
	final.Claim, final.ObservedGeneration, final.Spec, final.IgnoredHold = nil, m.Generation, m.Arming, e.HoldIgnored
	final.LastAction = &LastAction{Policy: p.policy.Name, Action: p.policy.Action.Type, Result: ResultSucceeded, Message: truncate(p.reason, maxMessage), Time: r.now.UTC()}
	if err != nil {
		e = failed(e, err)
		final.LastAction.Result, final.LastAction.Message = ResultFailed, truncate(err.Error(), maxMessage)
		final.LastAction.Uncertain = p.policy.Action.Type == policy.ActionDelete && uncertain(err)
	} else {
		e = s.succeeded(e, p)
		if !p.policy.Final {
			final.Fired = addFired(final.Fired, p.policy.Name, m.Generation, m.Arming, r.now)
		}
	}
	if werr := s.settlePair(ctx, p.target.name, key, claimed, final); werr != nil {
		if lostClaim(werr) {
			werr = fmt.Errorf("the namespace's record changed since this sweep claimed it: %w", werr)
		}
		if err != nil {
			return failed(e, fmt.Errorf("%w; recording the failure failed too: %w", err, werr))
		}
		return failed(e, fmt.Errorf("action done, but recording it failed: %w", werr))
	}
	return e
}

// errPairChanged: what a pair's decision rests on changed since the sweep
// listed the namespace.
var errPairChanged = errors.New("namespace changed since this sweep listed it")

// writePair writes a pair's record with a merge patch conditional on the
// namespace's resourceVersion: of two sweeps that listed one version, one
// writes. The version is the listed one, ns's; when the namespace changed
// since, it is read again, and written to again, conditional on the version
// read, if what the pair was decided on is as listed: the namespace
// itself, its labels, its hold and the pair's record. Another rule's record
// or anybody's annotation is no reason to wait for the next sweep; another
// sweep's claim of the pair is (errPairChanged).
func (s *Sweeper) writePair(ctx context.Context, name, key string, ns namespaceInfo, st PairStatus) error {
	record := mustJSON(st)
	resourceVersion := ns.resourceVersion
	reread := false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if reread {
			now, exists, err := s.namespaceNow(ctx, name)
			if err != nil {
				// Not known to be as listed: left to the next sweep.
				return fmt.Errorf("%w (reading it again failed: %v)", errPairChanged, err)
			}
			if !exists || now.uid != ns.uid || now.terminating || now.labels != ns.labels || now.hold != ns.hold || now.pairs[key] != ns.pairs[key] {
				return errPairChanged
			}
			resourceVersion = now.resourceVersion
		}
		reread = true
		body := mustJSON(map[string]any{"metadata": map[string]any{
			"resourceVersion": resourceVersion,
			"annotations":     map[string]any{key: record},
		}})
		return s.writer.patchNamespace(ctx, name, managerPatch{body: []byte(body)})
	})
}

// settlePair replaces the claimed record with final: a JSON patch whose
// first operation tests that the record is still the one this sweep's claim
// wrote, retried on transient failures as every record is.
func (s *Sweeper) settlePair(ctx context.Context, namespace, key string, claimed, final PairStatus) error {
	path := annotationPointer(key)
	body := mustJSON([]map[string]any{
		{"op": "test", "path": path, "value": mustJSON(claimed)},
		{"op": "replace", "path": path, "value": mustJSON(final)},
	})
	return s.retry(ctx, func(ctx context.Context) error {
		return s.writer.patchNamespace(ctx, namespace, managerPatch{jsonPatch: true, body: []byte(body)})
	})
}

// announceRule writes one Event on the rule for what this sweep did with
// its pairs: the actions that fired, and failures that are new (a pair whose
// last action had not failed already). Nothing done, no Event: never one
// per namespace, never one per sweep that changed nothing.
func (s *Sweeper) announceRule(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, fired, failedNow []string) {
	if len(fired) == 0 && len(failedNow) == 0 {
		return
	}
	ev := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), State: StateFired, Action: "Act"}
	var parts []string
	if len(fired) > 0 {
		parts = append(parts, fmt.Sprintf("acted on %d namespace(s): %s", len(fired), listed10(fired)))
	}
	if len(failedNow) > 0 {
		ev.State = StateFailed
		parts = append(parts, fmt.Sprintf("failed on %d namespace(s): %s", len(failedNow), listed10(failedNow)))
	}
	ev.Message = strings.Join(parts, "; ")
	s.announce(ctx, r, obj, ev)
}

// listed10 joins at most 10 items, saying how many more there are.
func listed10(items []string) string {
	if len(items) <= 10 {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:10], ", ") + fmt.Sprintf(" and %d more", len(items)-10)
}

// summarize writes the rule's status when what it summarizes changed: the
// namespaces matched, this sweep's pairs by state, and the latest actions.
func (s *Sweeper) summarize(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, m policy.Manager, stored Status, matched int, entries []Entry, holdIgnored string) {
	sum := RuleSummary{Matched: matched, States: map[State]int{}}
	var due *time.Time
	var acted []PairAction
	for _, e := range entries {
		sum.States[e.State]++
		if e.Due != nil && (due == nil || e.Due.Before(*due)) {
			due = e.Due
		}
		if (e.State == StateFired || e.State == StateFailed) && e.Policy != "" {
			result := ResultSucceeded
			if e.State == StateFailed {
				result = ResultFailed
			}
			acted = append(acted, PairAction{Namespace: e.Target, Policy: e.Policy, Action: e.Action, Result: result, Time: r.now.UTC()})
		}
	}
	if len(sum.States) == 0 {
		sum.States = nil
	}
	if stored.Rule != nil {
		// A failure already listed stays as it was listed: a pair failing
		// sweep after sweep rewrites nothing.
		acted = slices.DeleteFunc(acted, func(a PairAction) bool {
			return a.Result == ResultFailed && slices.ContainsFunc(stored.Rule.Latest, func(b PairAction) bool {
				return b.Namespace == a.Namespace && b.Policy == a.Policy && b.Action == a.Action && b.Result == a.Result
			})
		})
		acted = append(acted, stored.Rule.Latest...)
	}
	slices.SortStableFunc(acted, func(a, b PairAction) int { return b.Time.Compare(a.Time) })
	sum.Latest = acted[:min(len(acted), maxLatest)]

	e := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), State: StateWatching, Due: due,
		Message: fmt.Sprintf("matches %d namespace(s)%s", matched, byState(sum.States)), HoldIgnored: holdIgnored}
	if holdIgnored != "" {
		e.Message += "; hold ignored: " + holdIgnored
	}
	next := stored.clone()
	next.observe(e, m.Generation, r.now)
	next.Claim, next.Checks, next.LastAction = nil, nil, nil
	next.Rule, next.IgnoredHold = &sum, holdIgnored
	patch, changed := r.store.update(stored, next, obj.GetResourceVersion(), false)
	if !changed {
		return
	}
	if err := s.write(ctx, patch, obj.GetNamespace(), obj.GetName()); err != nil {
		// The summary is for people; the next sweep writes it again.
		s.log.Warn("rule status not written", "manager", obj.GetNamespace()+"/"+obj.GetName(), "error", err.Error())
		return
	}
	s.warnIgnoredHold(ctx, r, obj, stored, e)
}

// byState says ": 3 waiting, 1 done" for counts by state, in a stable order.
func byState(states map[State]int) string {
	if len(states) == 0 {
		return ""
	}
	keys := slices.SortedFunc(maps.Keys(states), func(a, b State) int { return cmp.Compare(a, b) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", states[k], k))
	}
	return ": " + strings.Join(parts, ", ")
}
