package sweep

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// A subject (a manager, or one namespace of a rule) is handled in two
// steps, as the descheduler separates its strategies from its evictor:
// evaluation reads it and returns a decision, writing nothing; the executor
// carries the decision out. The verdicts both kinds share are here.

// step is the kind of work a plan asks of the executor.
type step int

const (
	// stepAct applies the policy's action and records the outcome.
	stepAct step = iota
	// stepCompleteClaim applies again the action of a sweep that claimed
	// it and died, on the namespace the claim was made for (DELETE and
	// SCALE_DOWN are idempotent; a webhook is re-sent under its key).
	stepCompleteClaim
	// stepDeactivate: the action succeeded before; only the deactivation
	// is missing.
	stepDeactivate
	// stepConfirmDelete: a DELETE was recorded as failed without an answer
	// (a reset connection, a timeout), and the namespace went: the answer
	// was lost, not the delete.
	stepConfirmDelete
)

// plan is what the executor is to do for one subject.
type plan struct {
	step   step
	policy policy.Policy
	// generation is the manager (or rule) generation the plan is for, the
	// claim's when completing one: a webhook's key is derived from it.
	generation int64
	// reason says why, in a sentence.
	reason string
	target target
}

// target is a resolved target namespace.
type target struct {
	name string
	// uid is the namespace's when the plan (or the claim completed) was
	// made: a DELETE never removes a namespace recreated under its name.
	uid types.UID
	// listed is the namespace as listed (zero when it does not exist).
	listed cluster.Namespace
	// going: the namespace is terminating or gone already.
	going bool
	// home: the subject's record lives in the namespace, uid and all (the
	// manager's own, a rule's of it), and goes with it.
	home bool
	// recreated: completing a claim, the namespace of that name is not
	// the one the claim was made for.
	recreated bool
}

// decision is what evaluation concluded for one subject.
type decision struct {
	// manager is the parsed manager, or rule.
	manager policy.Manager
	// entry is the report entry: final without a plan, else what the
	// executor starts from.
	entry report.Entry
	// checks is the minChecks progress a waiting subject records.
	checks map[string]policy.CheckState
	// plan, when set, is work for the executor.
	plan *plan
	// untouched: nothing is to be written.
	untouched bool
	// granted: the plan has its place under --max-actions (see fairShare).
	granted bool
	// stuckOnly: of the record, only what it says of a stuck target is to
	// be written (a manager deactivated by its DELETE); stuckUnread: what
	// it says of it is kept, the target not read.
	stuckOnly, stuckUnread bool
}

// parseManager is policy.Parse; a test counts the parses of a sweep
// through it.
var parseManager = policy.Parse

// evaluateManager decides what to do with one manager, whose Status as
// listed is stored. It reads the sweep's namespaces and, for pods
// conditions, pods; it writes nothing.
func (s *Sweeper) evaluateManager(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored status.Status) decision {
	e := report.Entry{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	m, problems := parseManager(obj)
	e.Target = m.Target()
	if m.Deactivated {
		if d, ok := s.deletedTerminating(ctx, r, m, e, stored); ok {
			return d
		}
		return untouched(m, e, report.StateDeactivated, "spec.deactivated is true")
	}
	if d, live := s.liveClaim(m, e, stored.Claim); live {
		return d
	}
	if len(problems) > 0 {
		return decision{manager: m, entry: invalid(e, problems)}
	}
	if msg := s.refuse(m); msg != "" {
		e.State, e.Message = report.StateForbidden, msg
		return decision{manager: m, entry: e}
	}

	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return decision{manager: m, entry: failedEntry(e, err)}
	}
	ns, exists := namespaces[e.Target]
	t := target{name: e.Target, uid: ns.UID, listed: ns, going: !exists || ns.Terminating, home: exists && e.Target == m.Namespace}
	if t.going && e.Target == m.Namespace {
		// Nothing is written: the manager goes with its namespace, which
		// takes no new Event.
		e, _ = s.terminating(ctx, r, e, ns, fmt.Sprintf("namespace %s, where this manager lives, is being deleted; the manager goes with it", e.Target))
		return decision{manager: m, entry: e, untouched: true}
	}
	if d, ok := completeClaim(m, e, stored.Claim, t); ok {
		return d
	}
	if doneFor(stored.Progress, m, "") {
		// Only the deactivation is missing.
		return planned(m, e, nil, plan{step: stepDeactivate, policy: m.Policies[policyIndex(m, stored.LastAction.Policy)], reason: "the action succeeded before; deactivated now", target: t})
	}
	if d, ok := confirmDelete(m, e, stored.Progress, "", t); ok {
		return d
	}
	switch {
	case !exists:
		e.State, e.Message = report.StateTargetMissing, fmt.Sprintf("namespace %s does not exist", e.Target)
		return decision{manager: m, entry: e}
	case ns.Terminating:
		e, unread := s.terminating(ctx, r, e, ns, fmt.Sprintf("namespace %s is terminating", e.Target))
		return decision{manager: m, entry: e, stuckUnread: unread}
	}
	return backOff(s.evaluatePolicies(ctx, r, m, e, t, r.pods.Checks(false), stored.Progress, "",
		decide.Hold{On: "namespace " + e.Target, Value: ns.Hold}, decide.Hold{On: "manager " + m.Namespace + "/" + m.Name, Value: obj.GetAnnotations()[status.HoldAnnotation]}),
		stored.Progress, "", r.now)
}

// backOff turns d's plan to deliver a WEBHOOK into a deferral while the
// record stored (of spec, a rule's record's) says its delivery backs off:
// no attempt before then, so a silent receiver costs a sweep nothing.
func backOff(d decision, stored status.Progress, spec string, now time.Time) decision {
	p := d.plan
	if p == nil || p.step != stepAct || p.policy.Action.Type != policy.ActionWebhook {
		return d
	}
	until, failures := backingOff(stored, d.manager, p.policy.Name, spec, now)
	if until.IsZero() {
		return d
	}
	e := d.entry
	e.Due = timePtr(until)
	why := fmt.Sprintf("%d failed deliveries in a row", failures)
	if failures == 0 {
		why = "a deferred delivery"
	}
	return untouched(d.manager, e, report.StateDeferred, fmt.Sprintf("%s; the webhook backs off after %s: next attempt at %s", p.reason, why, until.UTC().Format(time.RFC3339)))
}

// liveClaim is the verdict of a claim that holds (see Claim.live), whatever
// its generation: its action may be under way, and any write could wipe it.
func (s *Sweeper) liveClaim(m policy.Manager, e report.Entry, c *status.Claim) (decision, bool) {
	if c == nil || !c.Live(s.clock(), s.cfg.ClaimTTL) {
		return decision{}, false
	}
	e.Policy, e.Action = c.Policy, c.Action
	return untouched(m, e, report.StateBusy, fmt.Sprintf("claimed by sweep %s until %s", c.Sweep, c.Expires.UTC().Format(time.RFC3339))), true
}

// invalid is the entry of a manager or rule whose spec has problems.
func invalid(e report.Entry, problems field.ErrorList) report.Entry {
	for _, p := range problems {
		e.Problems = append(e.Problems, p.Error())
	}
	e.State, e.Message = report.StateInvalid, fmt.Sprintf("%d problem(s); first: %s", len(problems), problems[0].Error())
	return e
}

// completeClaim is the verdict of an expired claim, whose sweep did not
// finish: one of this spec is completed, under its generation, whatever
// became of the target; one of another spec is void.
func completeClaim(m policy.Manager, e report.Entry, c *status.Claim, t target) (decision, bool) {
	if c == nil {
		return decision{}, false
	}
	i := policyIndex(m, c.Policy)
	if i < 0 || !sameSpec(m, c.Generation, c.Spec) {
		return decision{}, false
	}
	exists := t.listed.UID != ""
	t.uid = cmp.Or(c.TargetUID, t.listed.UID)
	t.home = t.home && t.uid == t.listed.UID
	t.recreated = exists && t.uid != t.listed.UID
	return planned(m, e, nil, plan{step: stepCompleteClaim, policy: m.Policies[i], generation: c.Generation,
		reason: "completing the expired claim of sweep " + c.Sweep, target: t}), true
}

// confirmDelete is the verdict of a DELETE recorded, for this spec, as
// failed without an answer, whose namespace went: the answer was lost.
func confirmDelete(m policy.Manager, e report.Entry, stored status.Progress, spec string, t target) (decision, bool) {
	last := stored.LastAction
	if last == nil || !last.Uncertain || last.Action != policy.ActionDelete || !t.going || !sameSpec(m, stored.ObservedGeneration, spec) {
		return decision{}, false
	}
	i := policyIndex(m, last.Policy)
	if i < 0 {
		return decision{}, false
	}
	return planned(m, e, nil, plan{step: stepConfirmDelete, policy: m.Policies[i],
		reason: "namespace " + t.name + " went after a DELETE whose answer was lost", target: t}), true
}

// evaluatePolicies evaluates m's policies on namespace t, with the
// progress stored (the stages fired in m's generation, or spec, skipped),
// then the holds: a plan when a policy holds and no hold keeps it, else
// the waiting entry with its minChecks progress.
func (s *Sweeper) evaluatePolicies(ctx context.Context, r *sweepRun, m policy.Manager, e report.Entry, t target, check probe.Check, stored status.Progress, spec string, holds ...decide.Hold) decision {
	in := policy.Input{Now: r.now, TargetCreated: t.listed.Created, Checks: stored.Checks, Pods: map[int]policy.PodsCheck{}, Fired: status.FiredIn(stored.Fired, m.Generation, spec),
		TargetExpires: t.listed.Expires, TargetTouched: t.listed.Touched}
	held := decide.HoldsAt(holds, r.now, s.cfg.MaxHold)
	// fromIndex: in.Activity is the sweep's index's (see lastActivity).
	fromIndex := false
	for {
		out := policy.Evaluate(m, in)
		switch out.Verdict {
		case policy.NeedPods:
			answer, err := check(ctx, e.Target, m.Policies[out.Policy].Condition)
			if err != nil {
				return applyHold(held, decision{manager: m, entry: failedEntry(e, err)})
			}
			in.Pods[out.Policy] = answer
			continue
		case policy.NeedActivity:
			if why, due := s.activityUnread(r, held, e); why != "" {
				e.State, e.Due = report.StateWaiting, due
				e.Message = fmt.Sprintf("policy %q: the last activity in namespace %s is not read %s", m.Policies[out.Policy].Name, e.Target, why)
				return applyHold(held, decision{manager: m, entry: e, checks: out.Checks})
			}
			activity, indexed, err := r.activity.Last(ctx, e.Target)
			if err != nil {
				return applyHold(held, decision{manager: m, entry: failedEntry(e, err)})
			}
			in.Activity, fromIndex = &activity, indexed
			continue
		case policy.Fire:
			if fromIndex && m.Policies[out.Policy].Condition.Type == policy.ConditionIdle && held.Until.IsZero() && !r.frozen && !s.beyondCap(r, e) {
				// The sweep's index misses what was created since it was
				// listed: the namespace's own lists confirm it is idle,
				// unless a hold, a freeze or --max-actions keeps the plan
				// from acting.
				activity, err := r.activity.Read(ctx, e.Target)
				if err != nil {
					return applyHold(held, decision{manager: m, entry: failedEntry(e, err)})
				}
				in.Activity, fromIndex = &activity, false
				continue
			}
			e.AnnotationIgnored, e.LastActivity = ignoredAnnotation(out.Policies), lastActivity(out.Policies)
			d := planned(m, e, conditions(out.Policies), plan{step: stepAct, policy: m.Policies[out.Policy], reason: out.Reason, target: t})
			// A hold may keep the plan waiting, with its progress.
			d.checks = out.Checks
			return applyHold(held, d)
		}
		details := make([]string, 0, len(out.Policies))
		for _, p := range out.Policies {
			details = append(details, p.Detail)
		}
		e.State, e.Message = report.StateWaiting, strings.Join(details, "; ")
		e.AnnotationIgnored, e.LastActivity = ignoredAnnotation(out.Policies), lastActivity(out.Policies)
		e.Due = timePtr(out.NextDue)
		e.Conditions = conditions(out.Policies)
		return applyHold(held, decision{manager: m, entry: e, checks: out.Checks})
	}
}

// activityUnread says why an IDLE policy's activity is not read, and until
// when, while a hold, a freeze or --max-actions keeps the subject from
// acting whatever it says: its four lists would buy nothing. Empty: read
// it.
func (s *Sweeper) activityUnread(r *sweepRun, held decide.Holds, e report.Entry) (string, *time.Time) {
	switch {
	case !held.Until.IsZero():
		return "while it is held", timePtr(held.Until)
	case r.frozen:
		return fmt.Sprintf("in a freeze; frozen until %s (--freeze)", r.frozenUntil.UTC().Format(time.RFC3339)), timePtr(r.frozenUntil)
	case s.beyondCap(r, e):
		return fmt.Sprintf("once --max-actions %d is reached", s.cfg.MaxActions), nil
	}
	return "", nil
}

// ignoredAnnotation says the policies' problems, each once: the
// annotations of the target they ignore (see policy.PolicyState.Problem).
func ignoredAnnotation(states []policy.PolicyState) string {
	var problems []string
	for _, s := range states {
		if s.Problem != "" && !slices.Contains(problems, s.Problem) {
			problems = append(problems, s.Problem)
		}
	}
	return strings.Join(problems, "; ")
}

// untouched is a final decision that writes nothing.
func untouched(m policy.Manager, e report.Entry, state report.State, msg string) decision {
	e.State, e.Message = state, msg
	return decision{manager: m, entry: e, untouched: true}
}

// planned is the decision to carry out p, for m's generation unless p
// names another.
func planned(m policy.Manager, e report.Entry, conds []report.Condition, p plan) decision {
	p.generation = cmp.Or(p.generation, m.Generation)
	e.Policy, e.Action, e.Conditions = p.policy.Name, p.policy.Action.Type, conds
	return decision{manager: m, entry: e, plan: &p}
}

func policyIndex(m policy.Manager, name string) int {
	return slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == name })
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

// lastActivity is the last activity the first IDLE policy evaluated
// counted, nil when none did.
func lastActivity(states []policy.PolicyState) *report.LastActivity {
	for _, s := range states {
		if a := s.LastActivity; a != nil {
			return &report.LastActivity{At: metav1.NewTime(a.At.UTC()), What: a.What}
		}
	}
	return nil
}

func conditions(states []policy.PolicyState) []report.Condition {
	out := make([]report.Condition, 0, len(states))
	for _, s := range states {
		out = append(out, report.Condition{Policy: s.Name, Holds: s.Holds, Detail: s.Detail, Due: timePtr(s.Due)})
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// terminating is the entry of a subject whose target ns is terminating:
// stuck, when it is, with why. Reading why may fail (unread): the entry
// says so, and what the record says of it is kept as it was.
func (s *Sweeper) terminating(ctx context.Context, r *sweepRun, e report.Entry, ns cluster.Namespace, msg string) (_ report.Entry, unread bool) {
	e.State, e.Message = report.StateTargetTerminating, msg
	st, err := r.stuck.Of(ctx, ns, r.now)
	switch {
	case err != nil:
		e.Message += "; " + err.Error()
		return e, true
	case st != nil:
		e.Stuck, e.Message = st, probe.Message(ns.Name, st)
	}
	return e, false
}

// deletedTerminating is the verdict of a manager deactivated by its
// DELETE while its target is still terminating: its entry says so, and a
// stuck namespace is written in its status (only when the cause changes).
// A status that still says stuck of a namespace now gone is cleared. The
// tenancy guards come first: what the status of a manager they refuse says
// of another namespace is its tenant's word, and no namespace is read for it.
func (s *Sweeper) deletedTerminating(ctx context.Context, r *sweepRun, m policy.Manager, e report.Entry, stored status.Status) (decision, bool) {
	if s.refuse(m) != "" {
		return decision{}, false
	}
	last := stored.LastAction
	deleted := last != nil && last.Action == policy.ActionDelete && last.Result == report.ResultSucceeded && e.Target != m.Namespace
	if !deleted && stored.Stuck == nil {
		return decision{}, false
	}
	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return decision{}, false
	}
	ns, exists := namespaces[e.Target]
	// The namespace it deleted, not one recreated under its name since,
	// nor one a status written by hand names: a record without targetUID
	// matches none.
	deleted = deleted && exists && last.TargetUID != "" && last.TargetUID == ns.UID
	if !deleted || !ns.Terminating {
		if stored.Stuck == nil {
			return decision{}, false
		}
		// Gone: the status says stuck no more.
		e.State, e.Message = report.StateDeactivated, "spec.deactivated is true"
		return decision{manager: m, entry: e, stuckOnly: true}, true
	}
	e.Policy, e.Action = last.Policy, last.Action
	e, unread := s.terminating(ctx, r, e, ns, fmt.Sprintf("namespace %s, deleted by policy %q at %s, is terminating", e.Target, last.Policy, last.Time.UTC().Format(time.RFC3339)))
	return decision{manager: m, entry: e, stuckOnly: true, stuckUnread: unread}, true
}
