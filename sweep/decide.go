package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/policy"
)

// A sweep handles a manager in two steps, as the descheduler separates its
// strategies from its evictor: evaluate reads the manager, its stored status
// and its target and returns a decision, without writing anything; execute
// carries out a decision that has a plan. Only execute and record write.

// step is the kind of work a plan asks of the executor.
type step int

const (
	// stepAct claims the manager, applies the policy's action, and records
	// the outcome.
	stepAct step = iota
	// stepCompleteClaim does the same for the claim of a sweep that died:
	// the action is applied again, on the namespace the claim was made for
	// (DELETE and SCALE_DOWN are idempotent; a webhook is re-sent with the
	// same Idempotency-Key).
	stepCompleteClaim
	// stepDeactivate: the action succeeded before; only the deactivation
	// is missing.
	stepDeactivate
	// stepConfirmDelete: a DELETE was recorded as failed without an answer
	// (a reset connection, a timeout), and the namespace went: the answer
	// was lost, not the delete.
	stepConfirmDelete
)

// plan is what the executor is to do for one manager.
type plan struct {
	step   step
	policy policy.Policy
	// generation, completing a rule's claim, is the rule generation the
	// claim was made for, which the webhook Idempotency-Key is derived from.
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
	// going: the namespace is terminating or gone already.
	going bool
	// home: the namespace, uid and all, is the one the manager lives in,
	// which a DELETE takes the manager with.
	home bool
	// recreated: completing a claim, the namespace of that name is another
	// one than the claim was made for.
	recreated bool
}

// decision is what evaluate concluded for one manager.
type decision struct {
	// manager is the parsed manager.
	manager policy.Manager
	// entry is the report entry: final without a plan; with one, what the
	// executor starts from (target, policy conditions).
	entry Entry
	// checks is the minChecks progress a waiting manager records.
	checks map[string]policy.CheckState
	// plan, when set, is work for the executor.
	plan *plan
	// untouched: nothing is written to the manager: it is deactivated,
	// another sweep's claim holds it, or it goes with its namespace.
	untouched bool
}

// evaluate decides what to do with one manager. It makes no write; reads
// are the sweep's list of namespaces and, for PODS_SUCCEED, pods checks.
func (s *Sweeper) evaluate(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, stored Status) decision {
	e := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	m, problems := policy.Parse(obj)
	e.Target = m.Target()
	final := func(state State, msg string) decision {
		e.State, e.Message = state, msg
		return decision{manager: m, entry: e}
	}
	if m.Deactivated {
		d := final(StateDeactivated, "spec.deactivated is true")
		d.untouched = true
		return d
	}
	// A live claim comes before every other verdict, whatever the
	// generation it was made for: its action may be under way, and any
	// write here could wipe it.
	if c := stored.Claim; c != nil && s.clock().Before(c.Expires) {
		if s.homeGoing(ctx, r, m, e.Target) {
			return s.goneWithItsNamespace(m, e)
		}
		e.Policy, e.Action = c.Policy, c.Action
		d := final(StateBusy, fmt.Sprintf("claimed by sweep %s until %s", c.Sweep, c.Expires.UTC().Format(time.RFC3339)))
		d.untouched = true
		return d
	}
	if len(problems) > 0 {
		for _, p := range problems {
			e.Problems = append(e.Problems, p.Error())
		}
		return final(StateInvalid, fmt.Sprintf("%d problem(s); first: %s", len(problems), problems[0].Error()))
	}
	if msg := s.refuse(m); msg != "" {
		return final(StateForbidden, msg)
	}

	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return decision{manager: m, entry: failed(e, err)}
	}
	ns, exists := namespaces[e.Target]
	going := !exists || ns.terminating
	if going && e.Target == m.Namespace {
		return s.goneWithItsNamespace(m, e)
	}

	if c := stored.Claim; c != nil {
		// A sweep claimed it and did not finish: complete its action,
		// whatever became of the target since. A claim made for an older
		// spec is void: the new spec is evaluated afresh.
		if i := policyIndex(m, c.Policy); i >= 0 && c.Generation == m.Generation {
			uid := c.TargetUID
			if uid == "" {
				uid = ns.uid
			}
			t := target{name: e.Target, uid: uid, going: going, home: home(m, e.Target, uid, ns), recreated: exists && uid != ns.uid}
			return s.planned(m, e, nil, plan{step: stepCompleteClaim, policy: m.Policies[i],
				reason: "completing the expired claim of sweep " + c.Sweep, target: t})
		}
	}

	// An earlier sweep of this generation got as far as the action: finish
	// what it left.
	if last := stored.LastAction; last != nil && stored.ObservedGeneration == m.Generation {
		t := target{name: e.Target, uid: ns.uid, going: going}
		i := policyIndex(m, last.Policy)
		switch {
		case i < 0:
		case last.Result == ResultSucceeded && !m.Policies[i].Final:
			// A stage: the manager stands, and goes on to the policies
			// after it.
		case last.Result == ResultSucceeded:
			return s.planned(m, e, nil, plan{step: stepDeactivate, policy: m.Policies[i], reason: "the action succeeded before; deactivating", target: t})
		case last.Action == policy.ActionDelete && last.Uncertain && going:
			return s.planned(m, e, nil, plan{step: stepConfirmDelete, policy: m.Policies[i], reason: "namespace " + e.Target + " went after a DELETE whose answer was lost", target: t})
		}
	}

	switch {
	case !exists:
		return final(StateTargetMissing, fmt.Sprintf("namespace %s does not exist", e.Target))
	case ns.terminating:
		return final(StateTargetTerminating, fmt.Sprintf("namespace %s is terminating", e.Target))
	}

	holds := []hold{{on: "namespace " + e.Target, value: ns.hold}, {on: "manager " + m.Namespace + "/" + m.Name, value: obj.GetAnnotations()[HoldAnnotation]}}
	return holdsAt(holds, r.now, s.cfg.MaxHold).apply(s.evaluatePolicies(ctx, r, m, e, ns, s.checks(r, false), stored.Checks, firedIn(stored.Fired, m.Generation, "")))
}

// evaluatePolicies evaluates m's policies on namespace ns, the entry e's
// target, checking pods with check as they ask and skipping the stages
// (policies that are not final) in fired: a plan to act when one holds, else
// the waiting entry with its minChecks progress.
func (s *Sweeper) evaluatePolicies(ctx context.Context, r *sweepRun, m policy.Manager, e Entry, ns namespaceInfo, check podsCheck, checks map[string]policy.CheckState, fired map[string]bool) decision {
	in := policy.Input{Now: r.now, TargetCreated: ns.created, Checks: checks, Pods: map[int]policy.PodsCheck{}, Fired: fired}
	for {
		out := policy.Evaluate(m, in)
		switch out.Verdict {
		case policy.NeedPods:
			answer, err := check(ctx, e.Target, m.Policies[out.Policy].Condition)
			if err != nil {
				return decision{manager: m, entry: failed(e, err)}
			}
			in.Pods[out.Policy] = answer
			continue
		case policy.Fire:
			d := s.planned(m, e, conditions(out.Policies), plan{step: stepAct, policy: m.Policies[out.Policy],
				reason: out.Reason, target: target{name: e.Target, uid: ns.uid, home: home(m, e.Target, ns.uid, ns)}})
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

// homeGoing reports whether manager m acts on the namespace it lives in
// and that namespace is being deleted (by m's DELETE, as a rule). Such a
// manager goes with the namespace: writing to it is wasted, and Events
// there are refused.
func (s *Sweeper) homeGoing(ctx context.Context, r *sweepRun, m policy.Manager, target string) bool {
	if target != m.Namespace {
		return false
	}
	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return false
	}
	ns, exists := namespaces[target]
	return !exists || ns.terminating
}

// goneWithItsNamespace is the decision for a manager whose namespace is
// going: nothing is written.
func (s *Sweeper) goneWithItsNamespace(m policy.Manager, e Entry) decision {
	e.State, e.Message = StateTargetTerminating, fmt.Sprintf("namespace %s, where this manager lives, is being deleted; the manager goes with it", e.Target)
	return decision{manager: m, entry: e, untouched: true}
}

// planned is the decision to carry out p.
func (s *Sweeper) planned(m policy.Manager, e Entry, conds []Condition, p plan) decision {
	e.Policy, e.Action, e.Conditions = p.policy.Name, p.policy.Action.Type, conds
	return decision{manager: m, entry: e, plan: &p}
}

// home reports whether the namespace name with uid, as listed in ns, is the
// one manager m lives in.
func home(m policy.Manager, name string, uid types.UID, ns namespaceInfo) bool {
	return name == m.Namespace && uid == ns.uid
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

func failed(e Entry, err error) Entry {
	e.State, e.Message = StateFailed, err.Error()
	return e
}
