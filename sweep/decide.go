package sweep

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy"
)

// A sweep handles a subject (a manager, or one namespace of a rule) in two
// steps, as the descheduler separates its strategies from its evictor:
// evaluation reads the subject, its record and its target and returns a
// decision, without writing anything; the executor carries the decision
// out. The verdicts both kinds of subject share are here: a live claim, an
// invalid spec, an expired claim to complete, a lost DELETE answer to
// confirm, and the policies themselves.

// step is the kind of work a plan asks of the executor.
type step int

const (
	// stepAct applies the policy's action and records the outcome: a
	// DELETE is its own claim, any other action is claimed first.
	stepAct step = iota
	// stepCompleteClaim claims, acts and records for the claim of a sweep
	// that died: the action is applied again, on the namespace the claim was
	// made for (DELETE and SCALE_DOWN are idempotent; a webhook is re-sent
	// with the same Idempotency-Key).
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
	// generation is the manager (or rule) generation the plan is for: the
	// current one, or, completing a claim, the one the claim was made for.
	// A webhook's Idempotency-Key is derived from it.
	generation int64
	// reason says why, in a sentence: the policy's condition, or what is
	// being completed.
	reason string
	target target
}

// target is a resolved target namespace.
type target struct {
	name string
	// uid is the namespace's uid when the plan was made or, completing a
	// claim, when the claim was made: a DELETE never removes a namespace
	// recreated under the same name.
	uid types.UID
	// listed is the namespace as the sweep listed it (zero when it does not
	// exist): a DELETE is preconditioned on its resourceVersion.
	listed namespaceInfo
	// going: the namespace is terminating or gone already.
	going bool
	// home: the namespace, uid and all, is the one the manager lives in,
	// which a DELETE takes the manager with.
	home bool
	// recreated: completing a claim, the namespace of that name is another
	// one than the claim was made for.
	recreated bool
}

// decision is what evaluation concluded for one subject.
type decision struct {
	// manager is the parsed manager, or rule.
	manager policy.Manager
	// entry is the report entry: final without a plan; with one, what the
	// executor starts from (target, policy conditions).
	entry Entry
	// checks is the minChecks progress a waiting subject records.
	checks map[string]policy.CheckState
	// plan, when set, is work for the executor.
	plan *plan
	// untouched: nothing is written: the manager is deactivated, another
	// sweep's claim holds the subject, or it goes with its namespace.
	untouched bool
}

// evaluateManager decides what to do with one manager, whose record as
// listed is stored. It makes no write; reads are the sweep's list of
// namespaces and, for PODS_SUCCEED and PODS_FAILED, pods checks.
func (s *Sweeper) evaluateManager(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Progress) decision {
	e := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	m, problems := policy.Parse(obj)
	e.Target = m.Target()
	if m.Deactivated {
		return untouched(m, e, StateDeactivated, "spec.deactivated is true")
	}
	if d, live := s.liveClaim(m, e, stored.Claim); live {
		return d
	}
	if len(problems) > 0 {
		return decision{manager: m, entry: invalid(e, problems)}
	}
	if msg := s.refuse(m); msg != "" {
		e.State, e.Message = StateForbidden, msg
		return decision{manager: m, entry: e}
	}

	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return decision{manager: m, entry: failedEntry(e, err)}
	}
	ns, exists := namespaces[e.Target]
	t := target{name: e.Target, uid: ns.uid, listed: ns, going: !exists || ns.terminating, home: exists && e.Target == m.Namespace}
	if t.going && e.Target == m.Namespace {
		return goneWithItsNamespace(m, e)
	}
	if d, ok := completeClaim(m, e, stored.Claim, t); ok {
		return d
	}
	if stored.doneFor(m, "") {
		// An earlier sweep of this generation got as far as the action:
		// only the deactivation is missing.
		return planned(m, e, nil, plan{step: stepDeactivate, policy: m.Policies[policyIndex(m, stored.LastAction.Policy)], reason: "the action succeeded before; deactivating", target: t})
	}
	if d, ok := confirmDelete(m, e, stored, "", t); ok {
		return d
	}
	switch {
	case !exists:
		e.State, e.Message = StateTargetMissing, fmt.Sprintf("namespace %s does not exist", e.Target)
		return decision{manager: m, entry: e}
	case ns.terminating:
		e.State, e.Message = StateTargetTerminating, fmt.Sprintf("namespace %s is terminating", e.Target)
		return decision{manager: m, entry: e}
	}
	holds := []hold{{on: "namespace " + e.Target, value: ns.hold}, {on: "manager " + m.Namespace + "/" + m.Name, value: obj.GetAnnotations()[HoldAnnotation]}}
	return holdsAt(holds, r.now, s.cfg.MaxHold).apply(s.evaluatePolicies(ctx, r, m, e, t, s.checks(r, false), stored.Checks, firedIn(stored.Fired, m.Generation, "")))
}

// liveClaim is the verdict of a claim that has not expired, whatever the
// generation it was made for: its action may be under way, and any write
// could wipe it. It comes before every other verdict.
func (s *Sweeper) liveClaim(m policy.Manager, e Entry, c *Claim) (decision, bool) {
	if c == nil || !s.clock().Before(c.Expires) {
		return decision{}, false
	}
	e.Policy, e.Action = c.Policy, c.Action
	return untouched(m, e, StateBusy, fmt.Sprintf("claimed by sweep %s until %s", c.Sweep, c.Expires.UTC().Format(time.RFC3339))), true
}

// invalid is the entry of a manager or rule whose spec has problems.
func invalid(e Entry, problems field.ErrorList) Entry {
	for _, p := range problems {
		e.Problems = append(e.Problems, p.Error())
	}
	e.State, e.Message = StateInvalid, fmt.Sprintf("%d problem(s); first: %s", len(problems), problems[0].Error())
	return e
}

// completeClaim is the verdict of a claim that expired: a sweep claimed
// the subject and did not finish. A claim of this spec is completed, under
// the generation it was made for, whatever became of the target since; one
// made for another spec is void, and the new spec is evaluated afresh.
func completeClaim(m policy.Manager, e Entry, c *Claim, t target) (decision, bool) {
	if c == nil {
		return decision{}, false
	}
	i := policyIndex(m, c.Policy)
	if i < 0 || !sameSpec(m, c.Generation, c.Spec) {
		return decision{}, false
	}
	exists := t.listed.uid != ""
	t.uid = cmp.Or(c.TargetUID, t.listed.uid)
	t.home = t.home && t.uid == t.listed.uid
	t.recreated = exists && t.uid != t.listed.uid
	return planned(m, e, nil, plan{step: stepCompleteClaim, policy: m.Policies[i], generation: c.Generation,
		reason: "completing the expired claim of sweep " + c.Sweep, target: t}), true
}

// confirmDelete is the verdict of a DELETE recorded, for this spec, as
// failed without an answer, when its namespace went since: the answer was
// lost, not the delete.
func confirmDelete(m policy.Manager, e Entry, stored Progress, spec string, t target) (decision, bool) {
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

// evaluatePolicies evaluates m's policies on namespace t, checking pods
// with check as they ask and skipping the stages (policies that are not
// final) in fired: a plan to act when one holds, else the waiting entry
// with its minChecks progress.
func (s *Sweeper) evaluatePolicies(ctx context.Context, r *sweepRun, m policy.Manager, e Entry, t target, check podsCheck, checks map[string]policy.CheckState, fired map[string]bool) decision {
	in := policy.Input{Now: r.now, TargetCreated: t.listed.created, Checks: checks, Pods: map[int]policy.PodsCheck{}, Fired: fired}
	for {
		out := policy.Evaluate(m, in)
		switch out.Verdict {
		case policy.NeedPods:
			answer, err := check(ctx, e.Target, m.Policies[out.Policy].Condition)
			if err != nil {
				return decision{manager: m, entry: failedEntry(e, err)}
			}
			in.Pods[out.Policy] = answer
			continue
		case policy.Fire:
			d := planned(m, e, conditions(out.Policies), plan{step: stepAct, policy: m.Policies[out.Policy], reason: out.Reason, target: t})
			// A hold may keep the plan waiting: the minChecks progress
			// stays.
			d.checks = out.Checks
			return d
		}
		details := make([]string, 0, len(out.Policies))
		for _, p := range out.Policies {
			details = append(details, p.Detail)
		}
		e.State, e.Message = StateWaiting, strings.Join(details, "; ")
		e.Due = timePtr(out.NextDue)
		e.Conditions = conditions(out.Policies)
		return decision{manager: m, entry: e, checks: out.Checks}
	}
}

// goneWithItsNamespace is the decision for a manager whose namespace is
// going: nothing is written.
func goneWithItsNamespace(m policy.Manager, e Entry) decision {
	return untouched(m, e, StateTargetTerminating, fmt.Sprintf("namespace %s, where this manager lives, is being deleted; the manager goes with it", e.Target))
}

// untouched is a final decision that writes nothing.
func untouched(m policy.Manager, e Entry, state State, msg string) decision {
	e.State, e.Message = state, msg
	return decision{manager: m, entry: e, untouched: true}
}

// planned is the decision to carry out p, for the manager's current
// generation unless p names another.
func planned(m policy.Manager, e Entry, conds []Condition, p plan) decision {
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
