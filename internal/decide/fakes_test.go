package decide

import (
	"cmp"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// The Evaluator reads through what it declares; these fakes answer as a
// case says and count what was asked, so that a case can tell a read
// made from one skipped.

// now is every case's sweep time.
var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// at is a time d from now, as an annotation or a record writes it.
func at(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }

// timeAt is a pointer to a time d from now.
func timeAt(d time.Duration) *time.Time { t := now.Add(d); return &t }

// fakeActivity answers Last and Read with what it holds, counting them.
type fakeActivity struct {
	last      policy.Activity
	indexed   bool
	lastErr   error
	read      policy.Activity
	readErr   error
	lastCalls int
	readCalls int
}

func (a *fakeActivity) Last(context.Context, string) (policy.Activity, bool, error) {
	a.lastCalls++
	return a.last, a.indexed, a.lastErr
}

func (a *fakeActivity) Read(context.Context, string) (policy.Activity, error) {
	a.readCalls++
	return a.read, a.readErr
}

// fakeStuck says the same of every namespace.
type fakeStuck struct {
	stuck *report.Stuck
	err   error
}

func (s fakeStuck) Of(context.Context, cluster.Namespace, time.Time) (*report.Stuck, error) {
	return s.stuck, s.err
}

// fakeAwake answers what is awake in every namespace, and records the
// kinds it was asked about and what a sleep leaves them at.
type fakeAwake struct {
	awake []string
	more  bool
	err   error
	asked [][]string
	to    []policy.SleepTo
}

func (a *fakeAwake) In(_ context.Context, _ string, kinds []string, to policy.SleepTo) ([]string, bool, error) {
	a.asked = append(a.asked, kinds)
	a.to = append(a.to, to)
	return a.awake, a.more, a.err
}

// fakeOwners answers every namespace's owner with a copy of owner (nil:
// none), and records the namespaces asked about and the refs remembered;
// Now answers now (zero: what owner says) and records the refs read again.
type fakeOwners struct {
	owner      *policy.Owner
	asked      []string
	remembered []string
	now        *policy.Owner
	readAgain  []string
}

func (o *fakeOwners) Now(_ context.Context, ref string) (policy.OwnerPresence, string) {
	o.readAgain = append(o.readAgain, ref)
	answer := cmp.Or(o.now, o.owner)
	return answer.Presence, answer.Why
}

func (o *fakeOwners) Of(_ context.Context, ns cluster.Namespace, remembered string) *policy.Owner {
	o.asked, o.remembered = append(o.asked, ns.Name), append(o.remembered, remembered)
	if o.owner == nil {
		return nil
	}
	own := *o.owner
	return &own
}

// fakeBudget answers BeyondCap from answers in turn, the last one from
// then on: the budget is shared, and may run out between two questions.
type fakeBudget struct {
	answers []bool
	asked   int
}

func (b *fakeBudget) BeyondCap(report.Entry) bool {
	b.asked++
	if len(b.answers) == 0 {
		return false
	}
	return b.answers[min(b.asked, len(b.answers))-1]
}

// fakeCheck answers every pods check with answer, or err.
type fakeCheck struct {
	answer policy.PodsCheck
	err    error
	asked  []string
}

func (c *fakeCheck) check(_ context.Context, namespace string, _ policy.Condition) (policy.PodsCheck, error) {
	c.asked = append(c.asked, namespace)
	return c.answer, c.err
}

// stuckSince is what the fake says of a namespace stuck in Terminating.
var stuckSince = &report.Stuck{Since: now.Add(-3 * time.Hour), Reasons: []report.StuckReason{{Reason: report.StuckContentFailure, Message: "deleting pods failed"}}}

// The namespace most cases are about, and the trusted namespace most
// managers live in.
const (
	target  = "preview-7"
	trusted = "nsman"
)

// targetNS is target as listed, created two hours before now; mutators
// change it.
func targetNS(muts ...func(*cluster.Namespace)) cluster.Namespace {
	ns := cluster.Namespace{Name: target, UID: "ns-uid-1", Created: now.Add(-2 * time.Hour)}
	for _, mut := range muts {
		mut(&ns)
	}
	return ns
}

func terminating(ns *cluster.Namespace) {
	ns.Terminating, ns.Deleting = true, now.Add(-3*time.Hour)
}

func uid(u types.UID) func(*cluster.Namespace) { return func(ns *cluster.Namespace) { ns.UID = u } }

func nsHold(d time.Duration) func(*cluster.Namespace) {
	return func(ns *cluster.Namespace) { ns.Hold = at(d) }
}

// Conditions and actions as a manifest spells them.
func ttl(seconds int64) map[string]any {
	return map[string]any{"type": policy.ConditionTTL, "params": map[string]any{"ttlSeconds": seconds}}
}

func idle(seconds int64) map[string]any {
	return map[string]any{"type": policy.ConditionIdle, "params": map[string]any{"idleSeconds": seconds}}
}

func ownerGone(seconds int64) map[string]any {
	return map[string]any{"type": policy.ConditionOwnerGone, "params": map[string]any{"graceSeconds": seconds}}
}

func podsSucceed(minChecks int64) map[string]any {
	return map[string]any{"type": policy.ConditionPodsSucceed, "params": map[string]any{"initialDelaySeconds": int64(0), "minChecks": minChecks}}
}

var (
	sleepAction   = map[string]any{"type": policy.ActionSleep}
	deleteAction  = map[string]any{"type": policy.ActionDelete}
	webhookAction = map[string]any{"type": policy.ActionWebhook, "params": map[string]any{"url": "https://hooks.example/notify"}}
)

func pol(name string, condition, action map[string]any) map[string]any {
	return map[string]any{"name": name, "condition": condition, "action": action}
}

// newManager is a manager in the trusted namespace, generation 3, that
// deletes target an hour after its creation (policy "expire"); mutators
// change it.
func newManager(muts ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policy.Group + "/" + policy.Version, "kind": policy.Kind,
		"metadata": map[string]any{"name": "cleanup", "namespace": trusted, "uid": "manager-uid", "generation": int64(3)},
		"spec":     map[string]any{"namespace": target, "policies": []any{pol("expire", ttl(3600), deleteAction)}},
	}}
	for _, mut := range muts {
		mut(obj)
	}
	return obj
}

func spec(key string, value any) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) { obj.Object["spec"].(map[string]any)[key] = value }
}

func policies(ps ...map[string]any) func(*unstructured.Unstructured) {
	list := make([]any, 0, len(ps))
	for _, p := range ps {
		list = append(list, p)
	}
	return spec("policies", list)
}

// livesIn moves the manager to namespace ns, named name.
func livesIn(ns, name string) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) { obj.SetNamespace(ns); obj.SetName(name) }
}

// noTarget drops spec.namespace: the manager's name is its target.
func noTarget(obj *unstructured.Unstructured) {
	delete(obj.Object["spec"].(map[string]any), "namespace")
}

func managerHold(d time.Duration) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		obj.SetAnnotations(map[string]string{status.HoldAnnotation: at(d)})
	}
}

// newRule is a rule in the trusted namespace, generation 4, matching
// preview-* namespaces, with policies ps (policy "expire" when none).
func newRule(t *testing.T, ps ...map[string]any) policy.Manager {
	t.Helper()
	if len(ps) == 0 {
		ps = []map[string]any{pol("expire", ttl(3600), deleteAction)}
	}
	obj := newManager(livesIn(trusted, "previews"), noTarget, spec("namePatterns", []any{"preview-*"}), policies(ps...))
	obj.SetGeneration(4)
	m, problems := policy.Parse(obj)
	if len(problems) > 0 || m.Rule == nil || m.Arming == "" {
		t.Fatalf("rule: %v (rule %v, arming %q)", problems, m.Rule, m.Arming)
	}
	return m
}

// wantPlan is what a case expects of a Decision's Plan.
type wantPlan struct {
	step       Step
	policy     string
	generation int64
	// reason is a part of Plan.Reason.
	reason                 string
	name                   string
	uid                    types.UID
	going, home, recreated bool
	wake, resleep          bool
}

// want is what a case expects of a Decision: every field is checked, a
// zero one as zero (msg "" as an empty message, plan nil as no plan).
type want struct {
	state report.State
	// msg is a part of the entry's message, the part that says why.
	msg               string
	policy            string
	due, heldUntil    *time.Time
	stuck             bool
	checks            map[string]policy.CheckState
	plan              *wantPlan
	untouched         bool
	stuckOnly, unread bool
}

// checkDecision reports how d differs from w.
func checkDecision(t *testing.T, d Decision, w want) {
	t.Helper()
	e := d.Entry
	if e.State != w.state {
		t.Errorf("state %q, want %q (message %q)", e.State, w.state, e.Message)
	}
	if w.msg == "" && e.Message != "" || !strings.Contains(e.Message, w.msg) {
		t.Errorf("message %q, want one saying %q", e.Message, w.msg)
	}
	if e.Policy != w.policy {
		t.Errorf("entry's policy %q, want %q", e.Policy, w.policy)
	}
	if !sameTime(e.Due, w.due) {
		t.Errorf("due %v, want %v", e.Due, w.due)
	}
	if !sameTime(e.HeldUntil, w.heldUntil) {
		t.Errorf("held until %v, want %v", e.HeldUntil, w.heldUntil)
	}
	if (e.Stuck != nil) != w.stuck {
		t.Errorf("stuck %+v, want it set: %t", e.Stuck, w.stuck)
	}
	if !reflect.DeepEqual(d.Checks, w.checks) {
		t.Errorf("checks %+v, want %+v", d.Checks, w.checks)
	}
	if d.Untouched != w.untouched || d.StuckOnly != w.stuckOnly || d.StuckUnread != w.unread {
		t.Errorf("untouched %t, stuck only %t, stuck unread %t; want %t, %t, %t", d.Untouched, d.StuckOnly, d.StuckUnread, w.untouched, w.stuckOnly, w.unread)
	}
	switch p := d.Plan; {
	case p == nil && w.plan == nil:
	case p == nil:
		t.Errorf("no plan, want %+v", *w.plan)
	case w.plan == nil:
		t.Errorf("plan %+v, want none", *p)
	default:
		got := wantPlan{step: p.Step, policy: p.Policy.Name, generation: p.Generation, reason: p.Reason, name: p.Target.Name, uid: p.Target.UID,
			going: p.Target.Going, home: p.Target.Home, recreated: p.Target.Recreated, wake: p.Wake, resleep: p.Resleep}
		wp := *w.plan
		if !strings.Contains(got.reason, wp.reason) || wp.reason == "" {
			t.Errorf("plan's reason %q, want one saying %q", got.reason, wp.reason)
		}
		got.reason = wp.reason
		if got != wp {
			t.Errorf("plan %+v, want %+v", got, wp)
		}
	}
}

func sameTime(got, want *time.Time) bool {
	if got == nil || want == nil {
		return got == want
	}
	return got.Equal(*want)
}
