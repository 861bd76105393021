package decide

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
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/report"
)

// A subject (a manager, or one namespace of a rule) is handled in two
// steps, as the descheduler separates its strategies from its evictor:
// evaluation reads it and returns a decision, writing nothing; the executor
// carries the decision out. The verdicts both kinds share are here.

// Step is the kind of work a plan asks of the executor.
type Step int

const (
	// StepAct applies the policy's action and records the outcome.
	StepAct Step = iota
	// StepCompleteClaim applies again the action of a sweep that claimed
	// it and died, on the namespace the claim was made for (DELETE and
	// SCALE_DOWN are idempotent; a webhook is re-sent under its key).
	StepCompleteClaim
	// StepDeactivate: the action succeeded before; only the deactivation
	// is missing.
	StepDeactivate
	// StepConfirmDelete: a DELETE was recorded as failed without an answer
	// (a reset connection, a timeout), and the namespace went: the answer
	// was lost, not the delete.
	StepConfirmDelete
)

// Plan is what the executor is to do for one subject.
type Plan struct {
	Step   Step
	Policy policy.Policy
	// Generation is the manager (or rule) generation the plan is for, the
	// claim's when completing one: a webhook's key is derived from it.
	Generation int64
	// Reason says why, in a sentence.
	Reason string
	Target Target
	// Wake: the policy is a SLEEP that no longer holds, and the target,
	// asleep, wakes.
	Wake bool
	// ClaimedBy, completing a claim, is the sweep that made it.
	ClaimedBy string
	// Owner is the target's owner for a DELETE via owner (see
	// policy.ViaOwner): nil when the namespace names none; one gone was read
	// again by name.
	Owner *policy.Owner
	// Resleep: the target is asleep, but workloads of it are awake again
	// (or new); they are put back to sleep, with no claim: each write is
	// conditional on the workload as read, and one asleep already is not
	// written to.
	Resleep bool
}

// Target is a resolved target namespace.
type Target struct {
	Name string
	// UID is the namespace's when the plan (or the claim completed) was
	// made: a DELETE never removes a namespace recreated under its name.
	UID types.UID
	// Listed is the namespace as listed (zero when it does not exist).
	Listed cluster.Namespace
	// Going: the namespace is terminating or gone already.
	Going bool
	// Home: the subject's record lives in the namespace, uid and all (the
	// manager's own, a rule's of it), and goes with it.
	Home bool
	// Recreated: completing a claim, the namespace of that name is not
	// the one the claim was made for.
	Recreated bool
}

// Decision is what evaluation concluded for one subject.
type Decision struct {
	// Manager is the parsed manager, or rule.
	Manager policy.Manager
	// Entry is the report entry: final without a plan, else what the
	// executor starts from.
	Entry report.Entry
	// Checks is the minChecks progress a waiting subject records, and the
	// owner its OWNER_GONE policies remember (see policy.CheckState).
	Checks map[string]policy.CheckState
	// Plan, when set, is work for the executor.
	Plan *Plan
	// Untouched: nothing is to be written.
	Untouched bool
	// Granted: the plan has its place under --max-actions (see Budget).
	Granted bool
	// Warned, on a waiting subject, is the warning to tell now
	// (policies[].warnBefore) as its record keeps it: the executor tells
	// it only once that record is written, so that one sweep tells it.
	Warned *status.Warned
	// WarnedTarget is the target warned, as listed: the channel its
	// warning goes to and the UID its links are bound to.
	WarnedTarget Target
	// StuckOnly: of the record, only what it says of a stuck target is to
	// be written (a manager deactivated by its DELETE); StuckUnread: what
	// it says of it is kept, the target not read.
	StuckOnly, StuckUnread bool
}

// Evaluator evaluates the managers and rule pairs of one sweep: it reads
// (namespaces, pods checks, activity, stuck namespaces) and writes nothing.
type Evaluator struct {
	// Now is the sweep's time; Clock tells the time now, by which a claim
	// is live.
	Now   time.Time
	Clock func() time.Time
	// Frozen: Now is in a freeze, which ends (with any it runs into) at
	// FrozenUntil.
	Frozen      bool
	FrozenUntil time.Time
	// ClaimTTL, MaxHold and MaxActions are --claim-ttl, --max-hold and
	// --max-actions; Trusted and Protected the namespaces a sweep trusts
	// and protects.
	ClaimTTL, MaxHold  time.Duration
	MaxActions         int
	Trusted, Protected []string
	// Namespaces are the sweep's, listed once.
	Namespaces func(ctx context.Context) (map[string]cluster.Namespace, error)
	Activity   Activity
	Stuck      Stuck
	// Owners answers the owner of a target, for a condition that weighs it.
	Owners Owners
	// Budget is --max-actions' share of the sweep.
	Budget Budget
	// Awake tells what is awake in a namespace kept asleep.
	Awake Awake
	// Traffic answers the requests to a namespace, for IDLE with a
	// traffic source; nil answers that none can be read.
	Traffic Traffic
}

// Traffic tells a namespace's requests in the window of IDLE condition c,
// from its source (c.Traffic), one query per source and window per sweep.
type Traffic interface {
	In(ctx context.Context, namespace string, c policy.Condition) traffic.Answer
}

// Awake tells the workloads awake in a namespace a SLEEP policy keeps
// asleep, of the kinds named (none: every kind), above what its sleep to
// to leaves them at, as lines "BY: Kind/name, ...": BY is the field
// manager that woke them, "someone" when unknown, "new" for workloads
// never put to sleep; more: more were awake than one read names
// (probe.MaxAwakeIn), of any kind.
type Awake interface {
	In(ctx context.Context, namespace string, kinds []string, to policy.SleepTo) (awake []string, more bool, err error)
}

// Owners tells who owns namespace ns, as the sweep read the owner kinds
// (see policy.Owner): nil when ns names no owner and remembered (the ref
// a record remembers, "" for none) is empty.
type Owners interface {
	Of(ctx context.Context, ns cluster.Namespace, remembered string) *policy.Owner
	// Now reads owner ref, as Of answered it, again by name: present,
	// gone, or unknown with why.
	Now(ctx context.Context, ref string) (policy.OwnerPresence, string)
}

// Check answers the pods condition c of a policy on a namespace.
type Check func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error)

// Activity is the last activity in namespaces, for IDLE: Last as the sweep
// read it (from its index, indexed), Read from the namespace's own lists.
type Activity interface {
	Last(ctx context.Context, namespace string) (a policy.Activity, indexed bool, err error)
	Read(ctx context.Context, namespace string) (policy.Activity, error)
}

// Stuck says why a namespace, as listed, is stuck in Terminating at now,
// or nil while it is not (yet).
type Stuck interface {
	Of(ctx context.Context, ns cluster.Namespace, now time.Time) (*report.Stuck, error)
}

// Budget tells whether --max-actions would defer the subject of entry e.
type Budget interface {
	BeyondCap(e report.Entry) bool
}

// parseManager is policy.Parse; a test counts the parses of a sweep
// through it.
var parseManager = policy.Parse

// EvaluateManager decides what to do with one manager, whose Status as
// listed is stored, answering its pods conditions with check. It reads the
// sweep's namespaces; it writes nothing.
func (ev *Evaluator) EvaluateManager(ctx context.Context, obj *unstructured.Unstructured, stored status.Status, check Check) Decision {
	e := report.Entry{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	m, problems := parseManager(obj)
	e.Target = m.Target()
	if m.Deactivated {
		if d, ok := ev.deletedTerminating(ctx, m, e, stored); ok {
			return d
		}
		return Untouched(m, e, report.StateDeactivated, "spec.deactivated is true")
	}
	if d, live := ev.liveClaim(m, e, stored.Claim); live {
		return d
	}
	if len(problems) > 0 {
		return Decision{Manager: m, Entry: Invalid(e, problems)}
	}
	if msg := ev.Refuse(m); msg != "" {
		e.State, e.Message = report.StateForbidden, msg
		return Decision{Manager: m, Entry: e}
	}

	namespaces, err := ev.Namespaces(ctx)
	if err != nil {
		return Decision{Manager: m, Entry: Failed(e, err)}
	}
	ns, exists := namespaces[e.Target]
	t := Target{Name: e.Target, UID: ns.UID, Listed: ns, Going: !exists || ns.Terminating, Home: exists && e.Target == m.Namespace}
	if t.Going && e.Target == m.Namespace {
		// Nothing is written: the manager goes with its namespace, which
		// takes no new Event.
		e, _ = ev.Terminating(ctx, e, ns, fmt.Sprintf("namespace %s, where this manager lives, is being deleted; the manager goes with it", e.Target))
		return Decision{Manager: m, Entry: e, Untouched: true}
	}
	if d, ok := completeClaim(m, e, stored.Claim, t); ok {
		return d
	}
	if doneFor(stored.Progress, m, "") {
		// Only the deactivation is missing.
		return planned(m, e, nil, Plan{Step: StepDeactivate, Policy: m.Policies[policyIndex(m, stored.LastAction.Policy)], Reason: "the action succeeded before; deactivated now", Target: t})
	}
	if d, ok := confirmDelete(m, e, stored.Progress, "", t); ok {
		return d
	}
	switch {
	case !exists:
		e.State, e.Message = report.StateTargetMissing, fmt.Sprintf("namespace %s does not exist", e.Target)
		return Decision{Manager: m, Entry: e}
	case ns.Terminating:
		e, unread := ev.Terminating(ctx, e, ns, fmt.Sprintf("namespace %s is terminating", e.Target))
		return Decision{Manager: m, Entry: e, StuckUnread: unread}
	}
	return backOff(ev.evaluatePolicies(ctx, m, e, t, check, stored.Progress, "",
		Hold{On: "namespace " + e.Target, Value: ns.Hold}, Hold{On: "manager " + m.Namespace + "/" + m.Name, Value: obj.GetAnnotations()[status.HoldAnnotation]},
		Wake("namespace "+e.Target, ns.Wake), Wake("manager "+m.Namespace+"/"+m.Name, obj.GetAnnotations()[status.WakeAnnotation])),
		stored.Progress, "", ev.Now)
}

// EvaluatePair decides what to do with rule m's pair of namespace ns,
// whose record is stored, answering its pods conditions with check and
// holding it, or waking it, by the rule's own hold and wake (rule, judged
// by the caller, those ignored left out); it writes nothing. A namespace
// that came back (e.CameBack, as the caller found it) says so (see
// cameBack).
func (ev *Evaluator) EvaluatePair(ctx context.Context, m policy.Manager, ns cluster.Namespace, stored status.PairStatus, e report.Entry, check Check, rule ...Hold) Decision {
	return ev.cameBack(ctx, ev.evaluatePair(ctx, m, ns, stored, e, check, rule...), ns)
}

func (ev *Evaluator) evaluatePair(ctx context.Context, m policy.Manager, ns cluster.Namespace, stored status.PairStatus, e report.Entry, check Check, rule ...Hold) Decision {
	t := Target{Name: e.Target, UID: ns.UID, Listed: ns, Going: ns.Terminating, Home: true}
	if d, live := ev.liveClaim(m, e, stored.Claim); live {
		return d
	}
	if d, ok := completeClaim(m, e, stored.Claim, t); ok {
		return d
	}
	if doneFor(stored.Progress, m, stored.Spec) {
		last := stored.LastAction
		e.Policy, e.Action = last.Policy, last.Action
		return Untouched(m, e, report.StateDone, fmt.Sprintf("policy %q fired (%s) at %s; done until the rule changes", last.Policy, last.Action, last.Time.UTC().Format(time.RFC3339)))
	}
	if d, ok := confirmDelete(m, e, stored.Progress, stored.Spec, t); ok {
		return d
	}
	if t.Going {
		return Untouched(m, e, report.StateTargetTerminating, fmt.Sprintf("namespace %s is terminating", e.Target))
	}
	return backOff(ev.evaluatePolicies(ctx, m, e, t, check, stored.Progress, m.Arming,
		append([]Hold{{On: "namespace " + e.Target, Value: ns.Hold}, Wake("namespace "+e.Target, ns.Wake)}, rule...)...),
		stored.Progress, stored.Spec, ev.Now)
}

// backOff turns d's plan to deliver a WEBHOOK into a deferral while the
// record stored (of spec, a rule's record's) says its delivery backs off:
// no attempt before then, so a silent receiver costs a sweep nothing.
func backOff(d Decision, stored status.Progress, spec string, now time.Time) Decision {
	p := d.Plan
	if p == nil || p.Step != StepAct || !p.Policy.Action.Kind().Queues() {
		return d
	}
	until, failures := backingOff(stored, d.Manager, p.Policy.Name, spec, now)
	if until.IsZero() {
		return d
	}
	e := d.Entry
	e.Due = TimePtr(until)
	why := fmt.Sprintf("%d failed deliveries in a row", failures)
	if failures == 0 {
		why = "a deferred delivery"
	}
	return Untouched(d.Manager, e, report.StateDeferred, fmt.Sprintf("%s; the webhook backs off after %s: next attempt at %s", p.Reason, why, until.UTC().Format(time.RFC3339)))
}

// liveClaim is the verdict of a claim that holds (see Claim.live), whatever
// its generation: its action may be under way, and any write could wipe it.
func (ev *Evaluator) liveClaim(m policy.Manager, e report.Entry, c *status.Claim) (Decision, bool) {
	if c == nil || !c.Live(ev.Clock(), ev.ClaimTTL) {
		return Decision{}, false
	}
	e.Policy, e.Action = c.Policy, c.Action
	return Untouched(m, e, report.StateBusy, fmt.Sprintf("claimed by sweep %s until %s", c.Sweep, c.Expires.UTC().Format(time.RFC3339))), true
}

// Invalid is the entry of a manager or rule whose spec has problems.
func Invalid(e report.Entry, problems field.ErrorList) report.Entry {
	for _, p := range problems {
		e.Problems = append(e.Problems, p.Error())
	}
	e.State, e.Message = report.StateInvalid, fmt.Sprintf("%d problem(s); first: %s", len(problems), problems[0].Error())
	return e
}

// completeClaim is the verdict of an expired claim, whose sweep did not
// finish: one of this spec is completed, under its generation, whatever
// became of the target; one of another spec is void.
func completeClaim(m policy.Manager, e report.Entry, c *status.Claim, t Target) (Decision, bool) {
	if c == nil {
		return Decision{}, false
	}
	i := policyIndex(m, c.Policy)
	if i < 0 || !sameSpec(m, c.Generation, c.Spec) {
		return Decision{}, false
	}
	exists := t.Listed.UID != ""
	t.UID = cmp.Or(c.TargetUID, t.Listed.UID)
	t.Home = t.Home && t.UID == t.Listed.UID
	t.Recreated = exists && t.UID != t.Listed.UID
	return planned(m, e, nil, Plan{Step: StepCompleteClaim, Policy: m.Policies[i], Generation: c.Generation,
		Reason: "completing the expired claim of sweep " + c.Sweep, Target: t, Wake: c.Wake, ClaimedBy: c.Sweep}), true
}

// confirmDelete is the verdict of a DELETE recorded, for this spec, as
// failed without an answer, whose namespace went: the answer was lost.
func confirmDelete(m policy.Manager, e report.Entry, stored status.Progress, spec string, t Target) (Decision, bool) {
	last := stored.LastAction
	if last == nil || !last.Uncertain || !policy.ActionKindOf(last.Action).RemovesTarget() || !t.Going || !sameSpec(m, stored.ObservedGeneration, spec) {
		return Decision{}, false
	}
	i := policyIndex(m, last.Policy)
	if i < 0 {
		return Decision{}, false
	}
	return planned(m, e, nil, Plan{Step: StepConfirmDelete, Policy: m.Policies[i],
		Reason: "namespace " + t.Name + " went after a DELETE whose answer was lost", Target: t}), true
}

// evaluatePolicies evaluates m's policies on namespace t, with the
// progress stored (the stages fired in m's generation, or spec, skipped),
// then the holds: a plan when a policy holds and no hold keeps it, else
// the waiting entry with its minChecks progress.
func (ev *Evaluator) evaluatePolicies(ctx context.Context, m policy.Manager, e report.Entry, t Target, check Check, stored status.Progress, spec string, holds ...Hold) Decision {
	in := policy.Input{Now: ev.Now, TargetCreated: t.Listed.Created, Checks: stored.Checks, Pods: map[int]policy.PodsCheck{}, Traffic: map[int]traffic.Answer{}, Fired: status.FiredIn(stored.Fired, m.Generation, spec),
		TargetExpires: t.Listed.Expires, TargetTouched: t.Listed.Touched}
	if stored.Asleep != nil {
		in.Asleep = stored.Asleep.Policy
	}
	if in.Owner = ev.owner(ctx, m, t, stored.Checks); in.Owner != nil {
		e.Owner = in.Owner.Ref
	}
	holds, wakes := split(holds)
	held, woken := HoldsAt(holds, ev.Now, ev.MaxHold), HoldsAt(wakes, ev.Now, ev.MaxHold)
	held.Ignored = strings.Join(slices.DeleteFunc([]string{held.Ignored, woken.Ignored}, func(s string) bool { return s == "" }), "; ")
	in.WokenUntil, in.WokenBy = woken.Until, woken.By
	// The activity and the owner are the sweep's index's until read again.
	c := confirming{owner: ev.Owners != nil}
	for {
		out := policy.Evaluate(m, in)
		switch out.Verdict {
		case policy.NeedPods:
			answer, err := check(ctx, e.Target, m.Policies[out.Policy].Condition)
			if err != nil {
				return applyHold(held, Decision{Manager: m, Entry: Failed(e, err)})
			}
			in.Pods[out.Policy] = answer
			continue
		case policy.NeedActivity, policy.NeedTraffic:
			if d, done := ev.readIdle(ctx, m, e, out, held, &in, &c); done {
				return applyHold(held, d)
			}
			continue
		case policy.Fire:
			// What the sweep's index says is confirmed before it acts,
			// unless a hold, a freeze or --max-actions keeps the plan from
			// acting.
			if c.due(m.Policies[out.Policy], in) && held.Until.IsZero() && !ev.Frozen && !ev.Budget.BeyondCap(e) {
				if err := ev.confirm(ctx, e.Target, m.Policies[out.Policy], &in, &c); err != nil {
					return applyHold(held, Decision{Manager: m, Entry: Failed(e, err)})
				}
				continue
			}
			return ev.warned(applyHold(held, ev.fire(ctx, m, e, t, out, in.Owner, c.owner, held)), m, t, out.Policies, stored.Warned, held.Until)
		}
		d := ev.waiting(ctx, m, e, t, stored.Asleep, out)
		if c.cameBack {
			d.Entry.Message += "; the owner came back: read again by name before acting, it exists, though the sweep's list of its kind had not found it"
		}
		return ev.warned(applyHold(held, d), m, t, out.Policies, stored.Warned, held.Until)
	}
}

// readIdle reads what IDLE policy out.Policy asks for (out.Verdict): the
// last activity in target e.Target, or its traffic, into in; done with a
// decision when it is not read (a hold, a freeze or --max-actions keeps
// the subject from acting whatever it says) or the read failed.
func (ev *Evaluator) readIdle(ctx context.Context, m policy.Manager, e report.Entry, out policy.Outcome, held Holds, in *policy.Input, c *confirming) (Decision, bool) {
	p := m.Policies[out.Policy]
	what := "the last activity in"
	if out.Verdict == policy.NeedTraffic {
		what = "the traffic of"
	}
	if why, due := ev.activityUnread(held, e); why != "" {
		e.State, e.Due = report.StateWaiting, due
		e.Message = fmt.Sprintf("policy %q: %s namespace %s is not read %s", p.Name, what, e.Target, why)
		return Decision{Manager: m, Entry: e, Checks: out.Checks}, true
	}
	if out.Verdict == policy.NeedTraffic {
		in.Traffic[out.Policy] = ev.traffic(ctx, e.Target, p.Condition)
		return Decision{}, false
	}
	activity, indexed, err := ev.Activity.Last(ctx, e.Target)
	if err != nil {
		return Decision{Manager: m, Entry: Failed(e, err)}, true
	}
	in.Activity, c.activity = &activity, indexed
	return Decision{}, false
}

// traffic is namespace's requests in IDLE condition c's window, unknown
// without Traffic.
func (ev *Evaluator) traffic(ctx context.Context, namespace string, c policy.Condition) traffic.Answer {
	if ev.Traffic == nil {
		return traffic.Answer{Window: c.Idle, Unknown: "this sweep reads no traffic"}
	}
	return ev.Traffic.In(ctx, namespace, c)
}

// confirming is what of an evaluation's evidence the sweep's index
// answered, to be confirmed before a policy that weighs it acts.
type confirming struct {
	// activity: Input.Activity is the index's (see Activity.Last); owner:
	// Input.Owner is, as Owners.Of answers it.
	activity, owner bool
	// cameBack: the index found the owner gone, a read by name present.
	cameBack bool
}

// due reports whether policy p, about to fire on in, weighs what the
// index answered and is yet to be confirmed: the activity (the index
// misses what was created since it was listed), or an owner gone (it may
// have come back since its kind was listed).
func (c *confirming) due(p policy.Policy, in policy.Input) bool {
	return c.activityDue(p) || c.owner && p.Condition.Evidence().Owner && in.Owner != nil && in.Owner.Presence == policy.OwnerGone
}

func (c *confirming) activityDue(p policy.Policy) bool {
	return c.activity && p.Condition.Evidence().Activity
}

// confirm reads again in target what c says is due for policy p: the
// activity from the namespace's own lists, or the owner by name
// (Owners.Now), one read an evaluation each. An owner that cannot be read
// is unknown, with why, on which OWNER_GONE waits.
func (ev *Evaluator) confirm(ctx context.Context, target string, p policy.Policy, in *policy.Input, c *confirming) error {
	if c.activityDue(p) {
		activity, err := ev.Activity.Read(ctx, target)
		if err != nil {
			return err
		}
		in.Activity, c.activity = &activity, false
		return nil
	}
	o := *in.Owner
	o.Presence, o.Why = ev.Owners.Now(ctx, o.Ref)
	in.Owner, c.owner, c.cameBack = &o, false, o.Presence == policy.OwnerPresent
	return nil
}

// fire is the decision to act by out's policy of m on target t, with its
// progress, which a hold (held) may keep waiting. A DELETE via owner's plan
// carries the owner (see viaOwner): known when a condition weighed it,
// unconfirmed while as the sweep's list answered it. Another action that
// removes the target says, in its reason, an owner that exists (see
// policy.Owner.MayRemake).
func (ev *Evaluator) fire(ctx context.Context, m policy.Manager, e report.Entry, t Target, out policy.Outcome, known *policy.Owner, unconfirmed bool, held Holds) Decision {
	e.AnnotationIgnored, e.LastActivity, e.Traffic = ignoredAnnotation(out.Policies), lastActivity(out.Policies), trafficOf(out.Policies)
	d := planned(m, e, conditions(out.Policies), Plan{Step: StepAct, Policy: m.Policies[out.Policy], Reason: out.Reason, Target: t, Wake: out.Wake})
	d.Checks = out.Checks
	switch {
	case d.Plan.Policy.Action.Via == policy.ViaOwner:
		acting := held.Until.IsZero() && !ev.Frozen && !ev.Budget.BeyondCap(e)
		if d.Plan.Owner = ev.viaOwner(ctx, t, known, unconfirmed, acting); d.Plan.Owner != nil {
			d.Entry.Owner = d.Plan.Owner.Ref
		}
	case d.Plan.Policy.Action.Kind().RemovesTarget() && ev.Owners != nil:
		// The action goes ahead; its entry, Event and notification say
		// who may make the namespace again.
		if known == nil {
			known = ev.Owners.Of(ctx, t.Listed, "")
		}
		if says := known.MayRemake(t.Name); says != "" {
			d.Entry.Owner, d.Entry.MayComeBack, d.Plan.Reason = known.Ref, true, d.Plan.Reason+"; "+says
		}
	}
	return d
}

// viaOwner is the owner of target t a DELETE via owner deletes through:
// known, when a condition weighed it (unconfirmed: as the sweep's list
// answered it), else asked of Owners; one the list found gone is read again
// by name when the plan acts, since one come back would recreate the
// namespace. Without Owners it cannot be read.
func (ev *Evaluator) viaOwner(ctx context.Context, t Target, known *policy.Owner, unconfirmed, acting bool) *policy.Owner {
	if ev.Owners == nil {
		return &policy.Owner{Why: "this sweep reads no owners"}
	}
	if known == nil {
		if known, unconfirmed = ev.Owners.Of(ctx, t.Listed, ""), true; known == nil {
			return nil
		}
	}
	o := *known
	if o.Presence == policy.OwnerGone && unconfirmed && acting {
		o.Presence, o.Why = ev.Owners.Now(ctx, o.Ref)
	}
	return &o
}

// cameBack tells, in d's message (or its plan's reason), that its
// namespace ns came back (d.Entry.CameBack), with the owner that exists
// and may have made it again, asked of Owners unless d names one already.
func (ev *Evaluator) cameBack(ctx context.Context, d Decision, ns cluster.Namespace) Decision {
	c := d.Entry.CameBack
	if c == nil {
		return d
	}
	if d.Entry.Owner == "" && ev.Owners != nil {
		if o := ev.Owners.Of(ctx, ns, ""); o != nil && o.Presence == policy.OwnerPresent {
			d.Entry.Owner = o.Ref
		}
	}
	note := fmt.Sprintf("namespace %s came back: made again at %s, after this rule deleted it at %s", ns.Name, c.Created.Format(time.RFC3339), c.Deleted.Format(time.RFC3339))
	if d.Entry.Owner != "" {
		note += ", its owner " + d.Entry.Owner + " still there"
	}
	if d.Plan != nil {
		d.Plan.Reason += "; " + note
	} else {
		d.Entry.Message = strings.Join(slices.DeleteFunc([]string{d.Entry.Message, note}, func(s string) bool { return s == "" }), "; ")
	}
	return d
}

// owner is the owner of target t for m, read once per evaluation when a
// condition of m weighs it (nil else), with the ref the record of the first
// policy that does remembers (see policy.CheckState.Owner). Without Owners
// it is an owner that cannot be read: never gone.
func (ev *Evaluator) owner(ctx context.Context, m policy.Manager, t Target, checks map[string]policy.CheckState) *policy.Owner {
	i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Condition.Evidence().Owner })
	if i < 0 {
		return nil
	}
	remembered := checks[m.Policies[i].Name].Owner
	if ev.Owners == nil {
		return &policy.Owner{Ref: remembered, By: policy.OwnerRemembered, Why: "this sweep reads no owners"}
	}
	return ev.Owners.Of(ctx, t.Listed, remembered)
}

// waiting is the decision on subject e when no policy fires: waiting, with
// what each policy waits for, or asleep when a SLEEP policy put the target
// to sleep (by, nil when awake).
func (ev *Evaluator) waiting(ctx context.Context, m policy.Manager, e report.Entry, t Target, by *status.Asleep, out policy.Outcome) Decision {
	details := make([]string, 0, len(out.Policies))
	for _, p := range out.Policies {
		details = append(details, p.Detail)
	}
	e.State, e.Message = report.StateWaiting, strings.Join(details, "; ")
	e.AnnotationIgnored, e.LastActivity, e.Traffic = ignoredAnnotation(out.Policies), lastActivity(out.Policies), trafficOf(out.Policies)
	e.Due = TimePtr(out.NextDue)
	e.Conditions = conditions(out.Policies)
	if by != nil {
		return ev.asleep(ctx, m, e, t, by, out)
	}
	return Decision{Manager: m, Entry: e, Checks: out.Checks}
}

// asleep is the decision on a target a SLEEP policy put to sleep, evaluated
// as e with no transition due: asleep, or, when that sleep failed part-way
// and a SLEEP policy still holds, a plan to put the rest to sleep, or, when
// workloads are awake again, to put them back to sleep (see resleep). A
// target asleep by a policy the manager no longer has wakes
// (policy.Evaluate wakes it only by a SLEEP policy it has).
func (ev *Evaluator) asleep(ctx context.Context, m policy.Manager, e report.Entry, t Target, by *status.Asleep, out policy.Outcome) Decision {
	sleeping := slices.IndexFunc(m.Policies, keepsState)
	waited := e
	e.State, e.Message, e.Due = "", "", nil // for a plan
	if sleeping < 0 {
		gone := policy.Policy{Name: by.Policy, Action: policy.Action{Type: policy.StateKeepingAction()}}
		return planned(m, e, e.Conditions, Plan{Step: StepAct, Policy: gone, Reason: fmt.Sprintf("policy %q that put the namespace to sleep is gone: wake", by.Policy), Target: t, Wake: true})
	}
	for _, st := range out.Policies {
		p := m.Policies[policyIndex(m, st.Name)]
		if by.Partial && st.Holds && p.Action.Kind().KeepsState() {
			d := planned(m, e, e.Conditions, Plan{Step: StepAct, Policy: p, Reason: fmt.Sprintf("%s; the last sleep failed part-way: the rest sleeps now", st.Detail), Target: t})
			d.Checks = out.Checks
			return d
		}
	}
	waited.State = report.StateAsleep
	waited.Message = fmt.Sprintf("asleep since %s (policy %q); %s", by.Since.UTC().Format(time.RFC3339), by.Policy, waited.Message)
	return ev.resleep(ctx, m, Decision{Manager: m, Entry: waited, Checks: out.Checks}, e, t, by)
}

// resleep is d, the decision on target t asleep by policy by, or, when
// workloads of the kinds that policy selects are awake in it, a plan to
// put them back to sleep, whose entry names who woke them (Entry.Undone).
// What cannot be read is said, and changes nothing.
func (ev *Evaluator) resleep(ctx context.Context, m policy.Manager, d Decision, e report.Entry, t Target, by *status.Asleep) Decision {
	// The policy it sleeps by, else (renamed, or now another action) the
	// first SLEEP policy: never another action's.
	i := policyIndex(m, by.Policy)
	if i < 0 || !m.Policies[i].Action.Kind().KeepsState() {
		i = slices.IndexFunc(m.Policies, keepsState)
	}
	if i < 0 || ev.Awake == nil || ev.Frozen {
		return d
	}
	p := m.Policies[i]
	kinds := make([]string, 0, len(p.Action.Selectors))
	for _, sel := range p.Action.Selectors {
		kinds = append(kinds, sel.Kind)
	}
	awake, more, err := ev.Awake.In(ctx, t.Name, kinds, p.Action.SleepTo)
	switch {
	case err != nil:
		d.Entry.Message += "; whether its workloads are still asleep is not known: " + err.Error()
		return d
	case len(awake) == 0 && !more:
		return d
	}
	e.Undone = slices.DeleteFunc(slices.Clone(awake), func(s string) bool { return strings.HasPrefix(s, "new: ") })
	if more {
		// Those past the read's bound may be of the kinds selected: the
		// sleep reads them again, and the next sweeps name them.
		awake = append(awake, "more past what one read names")
	}
	reason := fmt.Sprintf("asleep since %s (policy %q), but awake: %s; back to sleep", by.Since.UTC().Format(time.RFC3339), by.Policy, strings.Join(awake, "; "))
	resleep := planned(m, e, d.Entry.Conditions, Plan{Step: StepAct, Policy: p, Reason: reason, Target: t, Resleep: true})
	resleep.Checks = d.Checks
	return resleep
}

// activityUnread says why an IDLE policy's activity is not read, and until
// when, while a hold, a freeze or --max-actions keeps the subject from
// acting whatever it says: its four lists would buy nothing. Empty: read
// it.
func (ev *Evaluator) activityUnread(held Holds, e report.Entry) (string, *time.Time) {
	switch {
	case !held.Until.IsZero():
		return "while it is held", TimePtr(held.Until)
	case ev.Frozen:
		return fmt.Sprintf("in a freeze; frozen until %s (--freeze)", ev.FrozenUntil.UTC().Format(time.RFC3339)), TimePtr(ev.FrozenUntil)
	case ev.Budget.BeyondCap(e):
		return fmt.Sprintf("once --max-actions %d is reached", ev.MaxActions), nil
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

// Untouched is a final decision that writes nothing.
func Untouched(m policy.Manager, e report.Entry, state report.State, msg string) Decision {
	e.State, e.Message = state, msg
	return Decision{Manager: m, Entry: e, Untouched: true}
}

// planned is the decision to carry out p, for m's generation unless p
// names another.
func planned(m policy.Manager, e report.Entry, conds []report.Condition, p Plan) Decision {
	p.Generation = cmp.Or(p.Generation, m.Generation)
	e.Policy, e.Action, e.Conditions = p.Policy.Name, p.Policy.Action.Type, conds
	return Decision{Manager: m, Entry: e, Plan: &p}
}

// keepsState reports whether p's action keeps a state (SLEEP's asleep).
func keepsState(p policy.Policy) bool { return p.Action.Kind().KeepsState() }

func policyIndex(m policy.Manager, name string) int {
	return slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Name == name })
}

// Refuse applies the tenancy guards, returning why a manager may not act.
func (ev *Evaluator) Refuse(m policy.Manager) string {
	target := m.Target()
	if slices.Contains(ev.Protected, target) {
		return fmt.Sprintf("namespace %s is protected", target)
	}
	if target != m.Namespace && !slices.Contains(ev.Trusted, m.Namespace) {
		how := "spec.namespace"
		if m.TargetNamespace == "" {
			how = "its name"
		}
		return fmt.Sprintf("a manager in namespace %s may only target %s, not %s (by %s); trusted namespaces: %s",
			m.Namespace, m.Namespace, target, how, strings.Join(ev.Trusted, ", "))
	}
	if queriesTraffic(m) && !slices.Contains(ev.Trusted, m.Namespace) {
		return fmt.Sprintf("a manager in namespace %s may read traffic only by a preset: a query of its own is for managers in a trusted namespace (%s) and rules",
			m.Namespace, strings.Join(ev.Trusted, ", "))
	}
	if patches(m) && !slices.Contains(ev.Trusted, m.Namespace) {
		return fmt.Sprintf("a manager in namespace %s may not patch objects: patches are for managers in a trusted namespace (%s) and rules",
			m.Namespace, strings.Join(ev.Trusted, ", "))
	}
	return ""
}

// patches reports whether one of m's actions patches objects
// (params.patches): a patch writes with nsman's rights whatever its
// tenant may write, so only a trusted manager or a rule may.
func patches(m policy.Manager) bool {
	return slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return len(p.Action.SleepTo.Patches) > 0 })
}

// queriesTraffic reports whether one of m's conditions reads traffic with
// a query of its own rather than a preset: only a trusted manager or a
// rule may.
func queriesTraffic(m policy.Manager) bool {
	return slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return p.Condition.Traffic != nil && p.Condition.Traffic.Query != "" })
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

// trafficOf is the traffic the first IDLE policy evaluated read, nil
// when none did.
func trafficOf(states []policy.PolicyState) *report.Traffic {
	for _, s := range states {
		if tr := s.Traffic; tr != nil {
			out := &report.Traffic{Source: tr.Source, WindowSeconds: int64(tr.Window / time.Second), Unknown: tr.Unknown, Note: tr.Note}
			if tr.Unknown == "" {
				requests := tr.Requests
				out.Requests = &requests
			}
			return out
		}
	}
	return nil
}

func conditions(states []policy.PolicyState) []report.Condition {
	out := make([]report.Condition, 0, len(states))
	for _, s := range states {
		c := report.Condition{Policy: s.Name, Holds: s.Holds, Detail: s.Detail, Due: TimePtr(s.Due)}
		if !s.Outside.Equal(s.Due) {
			// Its windows put it off: nsman due says so.
			c.OutsideWindows = TimePtr(s.Outside)
		}
		out = append(out, c)
	}
	return out
}

func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// Terminating is the entry of a subject whose target ns is terminating:
// stuck, when it is, with why. Reading why may fail (unread): the entry
// says so, and what the record says of it is kept as it was.
func (ev *Evaluator) Terminating(ctx context.Context, e report.Entry, ns cluster.Namespace, msg string) (_ report.Entry, unread bool) {
	e.State, e.Message = report.StateTargetTerminating, msg
	st, err := ev.Stuck.Of(ctx, ns, ev.Now)
	switch {
	case err != nil:
		e.Message += "; " + err.Error()
		return e, true
	case st != nil:
		e.Stuck, e.Message = st, stuckMessage(ns.Name, st)
	}
	return e, false
}

// deletedTerminating is the verdict of a manager deactivated by its
// DELETE while its target is still terminating: its entry says so, and a
// stuck namespace is written in its status (only when the cause changes).
// A status that still says stuck of a namespace now gone, or of one this
// manager did not delete (deactivated by hand since), is cleared. The
// tenancy guards come first: what the status of a manager they refuse says
// of another namespace is its tenant's word, and no namespace is read for it.
func (ev *Evaluator) deletedTerminating(ctx context.Context, m policy.Manager, e report.Entry, stored status.Status) (Decision, bool) {
	if ev.Refuse(m) != "" {
		return Decision{}, false
	}
	last := stored.LastAction
	deleted := last != nil && policy.ActionKindOf(last.Action).RemovesTarget() && last.Result == report.ResultSucceeded && e.Target != m.Namespace
	if !deleted && stored.Stuck == nil {
		return Decision{}, false
	}
	namespaces, err := ev.Namespaces(ctx)
	if err != nil {
		return Decision{}, false
	}
	ns, exists := namespaces[e.Target]
	// The namespace it deleted, not one recreated under its name since,
	// nor one a status written by hand names: a record without targetUID
	// matches none.
	deleted = deleted && exists && last.TargetUID != "" && last.TargetUID == ns.UID
	if !deleted || !ns.Terminating {
		if stored.Stuck == nil {
			return Decision{}, false
		}
		// Gone: the status says stuck no more.
		e.State, e.Message = report.StateDeactivated, "spec.deactivated is true"
		return Decision{Manager: m, Entry: e, StuckOnly: true}, true
	}
	e.Policy, e.Action = last.Policy, last.Action
	e, unread := ev.Terminating(ctx, e, ns, fmt.Sprintf("namespace %s, deleted by policy %q at %s, is terminating", e.Target, last.Policy, last.Time.UTC().Format(time.RFC3339)))
	return Decision{Manager: m, Entry: e, StuckOnly: true, StuckUnread: unread}, true
}

// stuckMessage is the entry's message for namespace name, stuck as st
// says: its reasons named, their words in st (which change with counts of
// objects left, and would rewrite the status at every sweep).
func stuckMessage(name string, st *report.Stuck) string {
	reasons := make([]string, 0, len(st.Reasons))
	for _, r := range st.Reasons {
		reasons = append(reasons, r.Reason)
	}
	return fmt.Sprintf("namespace %s is stuck in Terminating since %s (%s); nsman explain %s says what holds it",
		name, st.Since.UTC().Format(time.RFC3339), strings.Join(reasons, ", "), name)
}

// Failed is e, failed with err.
func Failed(e report.Entry, err error) report.Entry {
	e.State, e.Message = report.StateFailed, err.Error()
	return e
}

// backingOff is the time before which no sweep delivers policy's WEBHOOK
// again, by p, for m's spec (the record's generation, or spec, the record's
// rule spec, when set), and the failures in a row; zero when it may now. A
// next attempt further ahead than any backoff (written by hand) is
// ignored.
func backingOff(p status.Progress, m policy.Manager, policyName, spec string, now time.Time) (time.Time, int) {
	last := p.LastAction
	if last == nil || last.Result != report.ResultFailed || !policy.ActionKindOf(last.Action).Queues() || last.Policy != policyName ||
		last.NextAttempt == nil || !now.Before(*last.NextAttempt) || last.NextAttempt.After(now.Add(MaxWebhookBackoff+status.ClaimSkew)) ||
		!sameSpec(m, p.ObservedGeneration, spec) {
		return time.Time{}, 0
	}
	return *last.NextAttempt, last.Failures
}

// doneFor reports whether, by p, a final policy's action succeeded for
// m's spec.
func doneFor(p status.Progress, m policy.Manager, spec string) bool {
	last := p.LastAction
	if last == nil || last.Result != report.ResultSucceeded || !sameSpec(m, p.ObservedGeneration, spec) {
		return false
	}
	i := policyIndex(m, last.Policy)
	return i >= 0 && m.Policies[i].Final
}

// sameSpec reports whether generation, or spec when set, is m's: a rule's
// records carry its spec (policy.Manager.Arming), which pausing and
// resuming it leaves as it was.
func sameSpec(m policy.Manager, generation int64, spec string) bool {
	return generation == m.Generation || spec != "" && spec == m.Arming
}

// Bounds of the backoff of a WEBHOOK whose delivery failed or was deferred.
const (
	minWebhookBackoff = time.Minute
	MaxWebhookBackoff = time.Hour
)

// WebhookBackoff is the pause after the n-th failure in a row: 1m, 2m, 4m,
// … up to 1h.
func WebhookBackoff(n int) time.Duration {
	if n > 7 { // 1m<<6 already exceeds the cap; avoid shifting further.
		return MaxWebhookBackoff
	}
	return min(minWebhookBackoff<<max(n-1, 0), MaxWebhookBackoff)
}

// Governors maps each namespace single-target managers (of any shard) may
// act on to those managers: rules leave it alone if one of them shields
// it. It is filled while the managers are listed, then read.
type Governors struct {
	trusted     []string
	byNamespace map[string][]governor
}

// NewGovernors returns the governors of a sweep that trusts the namespaces
// trusted.
func NewGovernors(trusted []string) *Governors {
	return &Governors{trusted: trusted, byNamespace: map[string][]governor{}}
}

// Note records a single-target manager as a governor of the
// namespace it aims at, if the manager may act on it: it lives there, or in
// a trusted namespace. A manager the guards refuse shields nothing from
// rules, nor does one deactivated or invalid. It is parsed here, keeping
// two strings and a bool: keeping the manager for later held every
// manager's object for the whole sweep (peak RSS 87 MiB at 10,000, not 52).
// A deactivated one is told by spec.deactivated alone: it is parsed once a
// sweep, by EvaluateManager.
func (g *Governors) Note(obj *unstructured.Unstructured) {
	target := aimsAt(obj)
	if target == obj.GetNamespace() || slices.Contains(g.trusted, obj.GetNamespace()) {
		shields := false
		if spec, _ := obj.Object["spec"].(map[string]any); spec["deactivated"] != true {
			m, problems := parseManager(obj)
			shields = !m.Deactivated && len(problems) == 0
		}
		g.byNamespace[target] = append(g.byNamespace[target], governor{name: obj.GetNamespace() + "/" + obj.GetName(), shields: shields})
	}
}

// governor is a single-target manager that may act on a namespace; it
// shields it from rules while it is active and valid.
type governor struct {
	name    string
	shields bool
}

// Shielding returns the name of the first governor of namespace that
// shields it from rules, or "" when none does.
func (g *Governors) Shielding(namespace string) string {
	for _, gov := range g.byNamespace[namespace] {
		if gov.shields {
			return gov.name
		}
	}
	return ""
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
