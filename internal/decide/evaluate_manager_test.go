package decide

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// managerCase is one manager evaluated with what the sweep reads of it.
type managerCase struct {
	name    string
	obj     *unstructured.Unstructured
	stored  status.Status
	listed  []cluster.Namespace
	listErr error
	pods    fakeCheck
	act     fakeActivity
	stuck   fakeStuck
	budget  []bool
	frozen  bool
	awake   *fakeAwake
	traffic *fakeTraffic
	want    want
	// The namespaces' lists, the activity index's answers, the namespace's
	// own lists read and the pods checks a case expects.
	lists, lasts, reads, checks int
}

// evaluator is the sweep's, at now, with the fakes of c.
func (c *managerCase) evaluator(lists *int) *Evaluator {
	ev := &Evaluator{
		Now: now, Clock: func() time.Time { return now },
		Frozen: c.frozen, FrozenUntil: now.Add(3 * time.Hour),
		ClaimTTL: 5 * time.Minute, MaxHold: DefaultMaxHold, MaxActions: 5,
		Trusted: []string{trusted}, Protected: []string{"kube-system"},
		Namespaces: func(context.Context) (map[string]cluster.Namespace, error) {
			*lists++
			if c.listErr != nil {
				return nil, c.listErr
			}
			out := map[string]cluster.Namespace{}
			for _, ns := range c.listed {
				out[ns.Name] = ns
			}
			return out, nil
		},
		Activity: &c.act, Stuck: c.stuck, Budget: &fakeBudget{answers: c.budget},
	}
	if c.awake != nil {
		ev.Awake = c.awake
	}
	if c.traffic != nil {
		ev.Traffic = c.traffic
	}
	return ev
}

func runManagerCases(t *testing.T, cases []managerCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lists := 0
			d := c.evaluator(&lists).EvaluateManager(t.Context(), c.obj, c.stored, c.pods.check)
			checkDecision(t, d, c.want)
			if lists != c.lists || c.act.lastCalls != c.lasts || c.act.readCalls != c.reads || len(c.pods.asked) != c.checks {
				t.Errorf("namespaces listed %d times, activity from the index %d, read %d, pods checked %d; want %d, %d, %d, %d",
					lists, c.act.lastCalls, c.act.readCalls, len(c.pods.asked), c.lists, c.lasts, c.reads, c.checks)
			}
			for _, ns := range c.pods.asked {
				if ns != target {
					t.Errorf("pods checked in %s, want %s", ns, target)
				}
			}
		})
	}
}

// A deactivated manager is left alone, but for what its status says of
// the namespace its DELETE left terminating: stuck or not, and no more
// once it is gone or another stands under its name.
func TestEvaluateManagerDeactivated(t *testing.T) {
	deactivated := spec("deactivated", true)
	deleted := &status.LastAction{Policy: "expire", Action: policy.ActionDelete, Result: report.ResultSucceeded, Time: now.Add(-time.Hour), TargetUID: "ns-uid-1"}
	byDelete := status.Status{Progress: status.Progress{ObservedGeneration: 3, LastAction: deleted}}
	stuckRecorded := byDelete
	stuckRecorded.Stuck = stuckSince
	noUID := *deleted
	noUID.TargetUID = ""
	left := want{state: report.StateDeactivated, msg: "spec.deactivated is true", untouched: true}
	cleared := want{state: report.StateDeactivated, msg: "spec.deactivated is true", stuckOnly: true}
	runManagerCases(t, []managerCase{
		{name: "deactivated", obj: newManager(deactivated), listed: []cluster.Namespace{targetNS()}, want: left},
		{name: "by its DELETE, the target terminating", obj: newManager(deactivated), stored: byDelete, listed: []cluster.Namespace{targetNS(terminating)}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: `namespace preview-7, deleted by policy "expire" at 2026-11-23T11:00:00Z, is terminating`, policy: "expire", stuckOnly: true}},
		{name: "by its DELETE, the target stuck", obj: newManager(deactivated), stored: byDelete, listed: []cluster.Namespace{targetNS(terminating)}, stuck: fakeStuck{stuck: stuckSince}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is stuck in Terminating since 2026-11-23T09:00:00Z (ContentFailure)", policy: "expire", stuck: true, stuckOnly: true}},
		{name: "by its DELETE, whether the target is stuck unread", obj: newManager(deactivated), stored: byDelete, listed: []cluster.Namespace{targetNS(terminating)}, stuck: fakeStuck{err: errors.New("list events: timeout")}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "is terminating; list events: timeout", policy: "expire", stuckOnly: true, unread: true}},
		{name: "by its DELETE, the target recreated under another uid, stuck recorded", obj: newManager(deactivated), stored: stuckRecorded, listed: []cluster.Namespace{targetNS(uid("ns-uid-2"), terminating)}, lists: 1, want: cleared},
		{name: "by its DELETE, the target recreated, nothing stuck recorded", obj: newManager(deactivated), stored: byDelete, listed: []cluster.Namespace{targetNS(uid("ns-uid-2"), terminating)}, lists: 1, want: left},
		{name: "by its DELETE, the target gone, stuck recorded", obj: newManager(deactivated), stored: stuckRecorded, lists: 1, want: cleared},
		{name: "by its DELETE, the target gone", obj: newManager(deactivated), stored: byDelete, lists: 1, want: left},
		{name: "by a DELETE recorded without the target's uid", obj: newManager(deactivated), stored: status.Status{Progress: status.Progress{LastAction: &noUID}}, listed: []cluster.Namespace{targetNS(terminating)}, lists: 1, want: left},
		{name: "stuck recorded, the namespaces unread", obj: newManager(deactivated), stored: stuckRecorded, listErr: errors.New("list namespaces: forbidden"), lists: 1, want: left},
		{name: "refused by the guards, stuck recorded", obj: newManager(deactivated, livesIn("team-b", "cleanup")), stored: stuckRecorded, listed: []cluster.Namespace{targetNS(terminating)}, want: left},
		{name: "by a DELETE of its own namespace", obj: newManager(deactivated, livesIn(target, "cleanup")), stored: byDelete, listed: []cluster.Namespace{targetNS(terminating)}, want: left},
	})
}

// A live claim keeps every sweep away, whatever its generation; an
// expired one of this generation is completed on the namespace it was
// made for; one of another generation, or of a policy gone, is void.
func TestEvaluateManagerClaims(t *testing.T) {
	claim := func(policyName string, generation int64, expires time.Duration, u string) status.Status {
		return status.Status{Progress: status.Progress{ObservedGeneration: 3, Claim: &status.Claim{Policy: policyName, Action: policy.ActionDelete, Sweep: "sweep-a",
			Expires: now.Add(expires), Generation: generation, TargetUID: types.UID(u)}}}
	}
	busy := want{state: report.StateBusy, msg: "claimed by sweep sweep-a until 2026-11-23T12:01:00Z", policy: "expire", untouched: true}
	complete := func(u string, going, home, recreated bool) want {
		return want{policy: "expire", plan: &wantPlan{step: StepCompleteClaim, policy: "expire", generation: 3, reason: "completing the expired claim of sweep sweep-a",
			name: target, uid: types.UID(u), going: going, home: home, recreated: recreated}}
	}
	fires := want{policy: "expire", plan: &wantPlan{step: StepAct, policy: "expire", generation: 3, reason: "TTL 1h elapsed at 2026-11-23T11:00:00Z", name: target, uid: "ns-uid-1"}}
	listed := []cluster.Namespace{targetNS()}
	own := livesIn(target, "cleanup")
	runManagerCases(t, []managerCase{
		{name: "live", obj: newManager(), stored: claim("expire", 3, time.Minute, "ns-uid-1"), listed: listed, want: busy},
		{name: "live, of another generation", obj: newManager(), stored: claim("expire", 2, time.Minute, "ns-uid-1"), listed: listed, want: busy},
		{name: "live, on a spec now invalid", obj: newManager(policies()), stored: claim("expire", 2, time.Minute, "ns-uid-1"), listed: listed,
			want: want{state: report.StateBusy, msg: "claimed by sweep sweep-a", policy: "expire", untouched: true}},
		{name: "expired", obj: newManager(), stored: claim("expire", 3, -time.Minute, "ns-uid-1"), listed: listed, lists: 1, want: complete("ns-uid-1", false, false, false)},
		{name: "expired, the target recreated since", obj: newManager(), stored: claim("expire", 3, -time.Minute, "ns-uid-0"), listed: listed, lists: 1, want: complete("ns-uid-0", false, false, true)},
		{name: "expired, the target gone", obj: newManager(), stored: claim("expire", 3, -time.Minute, "ns-uid-0"), lists: 1, want: complete("ns-uid-0", true, false, false)},
		{name: "expired, made without the target's uid", obj: newManager(), stored: claim("expire", 3, -time.Minute, ""), listed: listed, lists: 1, want: complete("ns-uid-1", false, false, false)},
		{name: "expired, in the manager's own namespace", obj: newManager(own), stored: claim("expire", 3, -time.Minute, "ns-uid-1"), listed: listed, lists: 1, want: complete("ns-uid-1", false, true, false)},
		{name: "expired, in the manager's own namespace recreated", obj: newManager(own), stored: claim("expire", 3, -time.Minute, "ns-uid-0"), listed: listed, lists: 1, want: complete("ns-uid-0", false, false, true)},
		{name: "expired, whatever holds the target", obj: newManager(), stored: claim("expire", 3, -time.Minute, "ns-uid-1"), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1, want: complete("ns-uid-1", false, false, false)},
		{name: "further ahead than --claim-ttl: no claim, completed", obj: newManager(), stored: claim("expire", 3, time.Hour, "ns-uid-1"), listed: listed, lists: 1, want: complete("ns-uid-1", false, false, false)},
		{name: "expired, of another generation: void", obj: newManager(), stored: claim("expire", 2, -time.Minute, "ns-uid-1"), listed: listed, lists: 1, want: fires},
		{name: "expired, of a policy gone: void", obj: newManager(), stored: claim("gone", 3, -time.Minute, "ns-uid-1"), listed: listed, lists: 1, want: fires},
	})
}

// The guards and the reads that keep a manager from being evaluated: an
// invalid spec, a namespace protected or another tenant's, namespaces
// that cannot be listed, a target terminating or gone.
func TestEvaluateManagerRefused(t *testing.T) {
	listed := []cluster.Namespace{targetNS(), {Name: "kube-system", UID: "ks"}}
	own := livesIn(target, "cleanup")
	runManagerCases(t, []managerCase{
		{name: "invalid", obj: newManager(policies()), listed: listed,
			want: want{state: report.StateInvalid, msg: "1 problem(s); first: spec.policies: Required value"}},
		{name: "a protected namespace", obj: newManager(spec("namespace", "kube-system")), listed: listed,
			want: want{state: report.StateForbidden, msg: "namespace kube-system is protected"}},
		{name: "another namespace, from an untrusted one", obj: newManager(livesIn("team-b", "cleanup")), listed: listed,
			want: want{state: report.StateForbidden, msg: "a manager in namespace team-b may only target team-b, not preview-7 (by spec.namespace); trusted namespaces: nsman"}},
		{name: "another namespace by its name, from an untrusted one", obj: newManager(livesIn("team-b", target), noTarget), listed: listed,
			want: want{state: report.StateForbidden, msg: "not preview-7 (by its name)"}},
		{name: "the namespaces unread", obj: newManager(), listErr: errors.New("list namespaces: forbidden"), lists: 1,
			want: want{state: report.StateFailed, msg: "list namespaces: forbidden"}},
		{name: "its own namespace terminating", obj: newManager(own), listed: []cluster.Namespace{targetNS(terminating)}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7, where this manager lives, is being deleted; the manager goes with it", untouched: true}},
		{name: "its own namespace stuck", obj: newManager(own), listed: []cluster.Namespace{targetNS(terminating)}, stuck: fakeStuck{stuck: stuckSince}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is stuck in Terminating", stuck: true, untouched: true}},
		{name: "its own namespace gone", obj: newManager(own), lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "where this manager lives, is being deleted", untouched: true}},
		{name: "the target missing", obj: newManager(), lists: 1,
			want: want{state: report.StateTargetMissing, msg: "namespace preview-7 does not exist"}},
		{name: "the target terminating", obj: newManager(), listed: []cluster.Namespace{targetNS(terminating)}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating"}},
		{name: "the target stuck", obj: newManager(), listed: []cluster.Namespace{targetNS(terminating)}, stuck: fakeStuck{stuck: stuckSince}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is stuck in Terminating since 2026-11-23T09:00:00Z (ContentFailure); nsman explain preview-7", stuck: true}},
		{name: "the target terminating, whether it is stuck unread", obj: newManager(), listed: []cluster.Namespace{targetNS(terminating)}, stuck: fakeStuck{err: errors.New("list events: timeout")}, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating; list events: timeout", unread: true}},
	})
}

// What the record says of the last action: one that succeeded leaves
// only the deactivation to do; a DELETE whose answer was lost is
// confirmed once the namespace goes.
func TestEvaluateManagerRecorded(t *testing.T) {
	last := func(policyName, action, result string, generation int64, uncertain bool) status.Status {
		return status.Status{Progress: status.Progress{ObservedGeneration: generation,
			LastAction: &status.LastAction{Policy: policyName, Action: action, Result: result, Time: now.Add(-time.Hour), Uncertain: uncertain}}}
	}
	stages := policies(map[string]any{"name": "warn", "final": false, "condition": ttl(3600), "action": webhookAction}, pol("expire", ttl(3*3600), deleteAction))
	warned := last("warn", policy.ActionWebhook, report.ResultSucceeded, 3, false)
	warned.Fired = []status.FiredPolicy{{Policy: "warn", Generation: 3, Time: now.Add(-time.Hour)}}
	warnedBefore := warned
	warnedBefore.Fired = []status.FiredPolicy{{Policy: "warn", Generation: 2, Time: now.Add(-time.Hour)}}
	fires := want{policy: "expire", plan: &wantPlan{step: StepAct, policy: "expire", generation: 3, reason: "TTL 1h elapsed", name: target, uid: "ns-uid-1"}}
	confirm := func(u string) want {
		return want{policy: "expire", plan: &wantPlan{step: StepConfirmDelete, policy: "expire", generation: 3, reason: "namespace preview-7 went after a DELETE whose answer was lost",
			name: target, uid: types.UID(u), going: true}}
	}
	going := []cluster.Namespace{targetNS(terminating)}
	runManagerCases(t, []managerCase{
		{name: "done before", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultSucceeded, 3, false), listed: going, lists: 1,
			want: want{policy: "expire", plan: &wantPlan{step: StepDeactivate, policy: "expire", generation: 3, reason: "the action succeeded before; deactivated now", name: target, uid: "ns-uid-1", going: true}}},
		{name: "done in another generation", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultSucceeded, 2, false), listed: []cluster.Namespace{targetNS()}, lists: 1, want: fires},
		{name: "a stage done in this generation is skipped", obj: newManager(stages), stored: warned, listed: []cluster.Namespace{targetNS()}, lists: 1,
			want: want{state: report.StateWaiting, msg: "fired already in this generation; TTL 3h elapses at 2026-11-23T13:00:00Z", due: timeAt(time.Hour)}},
		{name: "a stage done in another generation fires again", obj: newManager(stages), stored: warnedBefore, listed: []cluster.Namespace{targetNS()}, lists: 1,
			want: want{policy: "warn", plan: &wantPlan{step: StepAct, policy: "warn", generation: 3, reason: "TTL 1h elapsed", name: target, uid: "ns-uid-1"}}},
		{name: "a DELETE's answer lost, the target terminating", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultFailed, 3, true), listed: going, lists: 1, want: confirm("ns-uid-1")},
		{name: "a DELETE's answer lost, the target gone", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultFailed, 3, true), lists: 1, want: confirm("")},
		{name: "a DELETE's answer lost, the target still there", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultFailed, 3, true), listed: []cluster.Namespace{targetNS()}, lists: 1, want: fires},
		{name: "a DELETE's answer lost in another generation", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultFailed, 2, true), listed: going, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating"}},
		{name: "a DELETE's answer lost, of a policy gone", obj: newManager(), stored: last("purge", policy.ActionDelete, report.ResultFailed, 3, true), listed: going, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating"}},
		{name: "a DELETE that failed with an answer", obj: newManager(), stored: last("expire", policy.ActionDelete, report.ResultFailed, 3, false), listed: going, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating"}},
		{name: "a SCALE_DOWN's answer lost", obj: newManager(), stored: last("expire", policy.ActionScaleDown, report.ResultFailed, 3, true), listed: going, lists: 1,
			want: want{state: report.StateTargetTerminating, msg: "namespace preview-7 is terminating"}},
	})
}

// A policy that holds is a plan unless a hold in force keeps it waiting;
// one that does not waits until it is due.
func TestEvaluateManagerPolicies(t *testing.T) {
	fires := want{policy: "expire", plan: &wantPlan{step: StepAct, policy: "expire", generation: 3, reason: "TTL 1h elapsed at 2026-11-23T11:00:00Z", name: target, uid: "ns-uid-1"}}
	ignored := fires
	ignored.msg = "; hold ignored: nsman.k8s.consol.de/hold-until on namespace preview-7 ends 2026-12-24T12:00:00Z, more than --max-hold 30d ahead"
	later := policies(pol("expire", ttl(3*3600), deleteAction))
	held := func(by string, d time.Duration) want {
		return want{state: report.StateWaiting, msg: `policy "expire" holds, but ` + by + " is held until " + at(d), due: timeAt(d), heldUntil: timeAt(d)}
	}
	runManagerCases(t, []managerCase{
		{name: "a TTL that fires", obj: newManager(), listed: []cluster.Namespace{targetNS()}, lists: 1, want: fires},
		{name: "a TTL that waits", obj: newManager(later), listed: []cluster.Namespace{targetNS()}, lists: 1,
			want: want{state: report.StateWaiting, msg: "TTL 3h elapses at 2026-11-23T13:00:00Z", due: timeAt(time.Hour)}},
		{name: "held by its namespace", obj: newManager(), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1, want: held("namespace preview-7", time.Hour)},
		{name: "held by the manager", obj: newManager(managerHold(2 * time.Hour)), listed: []cluster.Namespace{targetNS()}, lists: 1, want: held("manager nsman/cleanup", 2*time.Hour)},
		{name: "held by both, until the later end", obj: newManager(managerHold(2 * time.Hour)), listed: []cluster.Namespace{targetNS(nsHold(3 * time.Hour))}, lists: 1, want: held("namespace preview-7", 3*time.Hour)},
		{name: "a hold that ended", obj: newManager(), listed: []cluster.Namespace{targetNS(nsHold(-time.Minute))}, lists: 1, want: fires},
		{name: "a hold beyond --max-hold is ignored", obj: newManager(), listed: []cluster.Namespace{targetNS(nsHold(31 * 24 * time.Hour))}, lists: 1, want: ignored},
		{name: "a hold ending before a waiting one's due time", obj: newManager(later), listed: []cluster.Namespace{targetNS(nsHold(30 * time.Minute))}, lists: 1,
			want: want{state: report.StateWaiting, msg: "TTL 3h elapses at 2026-11-23T13:00:00Z; namespace preview-7 is held until 2026-11-23T12:30:00Z", due: timeAt(time.Hour), heldUntil: timeAt(30 * time.Minute)}},
		{name: "a hold beyond a waiting one's due time", obj: newManager(later), listed: []cluster.Namespace{targetNS(nsHold(2 * time.Hour))}, lists: 1,
			want: want{state: report.StateWaiting, msg: "TTL 3h elapses at 2026-11-23T13:00:00Z; namespace preview-7 is held until 2026-11-23T14:00:00Z", due: timeAt(2 * time.Hour), heldUntil: timeAt(2 * time.Hour)}},
	})
}

// A WEBHOOK whose delivery backs off is deferred until its next attempt,
// with the failures that led there; one whose next attempt came goes.
func TestEvaluateManagerWebhookBackoff(t *testing.T) {
	notify := policies(pol("notify", ttl(3600), webhookAction))
	failed := func(failures int, next time.Duration) status.Status {
		return status.Status{Progress: status.Progress{ObservedGeneration: 3, LastAction: &status.LastAction{Policy: "notify", Action: policy.ActionWebhook,
			Result: report.ResultFailed, Time: now.Add(-time.Minute), Failures: failures, NextAttempt: timeAt(next), Deferred: failures == 0}}}
	}
	listed := []cluster.Namespace{targetNS()}
	runManagerCases(t, []managerCase{
		{name: "backing off", obj: newManager(notify), stored: failed(3, 4*time.Minute), listed: listed, lists: 1,
			want: want{state: report.StateDeferred, msg: "TTL 1h elapsed at 2026-11-23T11:00:00Z; the webhook backs off after 3 failed deliveries in a row: next attempt at 2026-11-23T12:04:00Z",
				policy: "notify", due: timeAt(4 * time.Minute), untouched: true}},
		{name: "backing off after a deferral", obj: newManager(notify), stored: failed(0, time.Minute), listed: listed, lists: 1,
			want: want{state: report.StateDeferred, msg: "the webhook backs off after a deferred delivery: next attempt at 2026-11-23T12:01:00Z", policy: "notify", due: timeAt(time.Minute), untouched: true}},
		{name: "free to go", obj: newManager(notify), stored: failed(3, -time.Second), listed: listed, lists: 1,
			want: want{policy: "notify", plan: &wantPlan{step: StepAct, policy: "notify", generation: 3, reason: "TTL 1h elapsed", name: target, uid: "ns-uid-1"}}},
		{name: "held while backing off", obj: newManager(notify), stored: failed(3, 4*time.Minute), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1,
			want: want{state: report.StateWaiting, msg: `policy "notify" holds, but namespace preview-7 is held until`, due: timeAt(time.Hour), heldUntil: timeAt(time.Hour)}},
	})
}

// A PODS_SUCCEED policy asks the check, in the target: a pod not done
// keeps it waiting, a check that fails is the entry's failure, and the
// progress of minChecks is kept.
func TestEvaluateManagerPods(t *testing.T) {
	once := policies(pol("finished", podsSucceed(1), deleteAction))
	twice := policies(pol("finished", podsSucceed(2), deleteAction))
	listed := []cluster.Namespace{targetNS()}
	passedOnce := status.Status{Progress: status.Progress{ObservedGeneration: 3, Checks: map[string]policy.CheckState{"finished": {Generation: 3, Passed: 1, Last: now.Add(-time.Minute)}}}}
	runManagerCases(t, []managerCase{
		{name: "a pod pending", obj: newManager(once), listed: listed, pods: fakeCheck{answer: policy.PodsCheck{NotSucceeded: 1, Example: "pod web-1 is Pending"}}, lists: 1, checks: 1,
			want: want{state: report.StateWaiting, msg: "not every pod in the namespace Succeeded: pod web-1 is Pending"}},
		{name: "every pod succeeded", obj: newManager(once), listed: listed, lists: 1, checks: 1,
			want: want{policy: "finished", plan: &wantPlan{step: StepAct, policy: "finished", generation: 3, reason: "every pod in the namespace Succeeded", name: target, uid: "ns-uid-1"}}},
		{name: "the check failing", obj: newManager(once), listed: listed, pods: fakeCheck{err: errors.New("list pods: etcdserver: request timed out")}, lists: 1, checks: 1,
			want: want{state: report.StateFailed, msg: "list pods: etcdserver: request timed out"}},
		{name: "the check failing while held", obj: newManager(once), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, pods: fakeCheck{err: errors.New("list pods: timeout")}, lists: 1, checks: 1,
			want: want{state: report.StateFailed, msg: "list pods: timeout", heldUntil: timeAt(time.Hour)}},
		{name: "the first of two checks passed", obj: newManager(twice), listed: listed, lists: 1, checks: 1,
			want: want{state: report.StateWaiting, msg: "1 of 2 checks passed, next at 2026-11-23T12:00:10Z", due: timeAt(10 * time.Second),
				checks: map[string]policy.CheckState{"finished": {Generation: 3, Passed: 1, Last: now}}}},
		{name: "the second of two checks passed", obj: newManager(twice), stored: passedOnce, listed: listed, lists: 1, checks: 1,
			want: want{policy: "finished", checks: passedOnce.Checks,
				plan: &wantPlan{step: StepAct, policy: "finished", generation: 3, reason: "every pod in the namespace Succeeded in 2 consecutive checks", name: target, uid: "ns-uid-1"}}},
		{name: "the second of two checks passed, held", obj: newManager(twice), stored: passedOnce, listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1, checks: 1,
			want: want{state: report.StateWaiting, msg: `policy "finished" holds, but namespace preview-7 is held until`, checks: passedOnce.Checks, due: timeAt(time.Hour), heldUntil: timeAt(time.Hour)}},
	})
}

// An IDLE policy reads the activity from the sweep's index, confirmed by
// the namespace's own lists when it would fire; neither is read while a
// hold, a freeze or --max-actions keeps the manager from acting, and the
// entry says which.
func TestEvaluateManagerIdle(t *testing.T) {
	idles := policies(pol("idle", idle(3600), deleteAction))
	listed := []cluster.Namespace{targetNS()}
	old := policy.Activity{At: now.Add(-90 * time.Minute), What: "pod web-1 created"}
	recent := policy.Activity{At: now.Add(-10 * time.Minute), What: "pod web-2 created"}
	fires := want{policy: "idle", plan: &wantPlan{step: StepAct, policy: "idle", generation: 3, reason: "idle 1h since 2026-11-23T10:30:00Z (last activity: pod web-1 created)", name: target, uid: "ns-uid-1"}}
	unread := func(why string, due *time.Time) want {
		return want{state: report.StateWaiting, msg: `policy "idle": the last activity in namespace preview-7 is not read ` + why, due: due}
	}
	whileHeld := unread("while it is held; namespace preview-7 is held until 2026-11-23T13:00:00Z", timeAt(time.Hour))
	whileHeld.heldUntil = timeAt(time.Hour)
	runManagerCases(t, []managerCase{
		{name: "idle by the index, confirmed by its lists", obj: newManager(idles), listed: listed, act: fakeActivity{last: old, indexed: true, read: old}, lists: 1, lasts: 1, reads: 1, want: fires},
		{name: "idle by the index, not by its lists", obj: newManager(idles), listed: listed, act: fakeActivity{last: old, indexed: true, read: recent}, lists: 1, lasts: 1, reads: 1,
			want: want{state: report.StateWaiting, msg: "last activity: pod web-2 created at 2026-11-23T11:50:00Z; idle 1h at 2026-11-23T12:50:00Z", due: timeAt(50 * time.Minute)}},
		{name: "idle, read from its lists already", obj: newManager(idles), listed: listed, act: fakeActivity{last: old}, lists: 1, lasts: 1, want: fires},
		{name: "active by the index", obj: newManager(idles), listed: listed, act: fakeActivity{last: recent, indexed: true}, lists: 1, lasts: 1,
			want: want{state: report.StateWaiting, msg: "last activity: pod web-2 created", due: timeAt(50 * time.Minute)}},
		{name: "the index failing", obj: newManager(idles), listed: listed, act: fakeActivity{lastErr: errors.New("index: list pods: timeout")}, lists: 1, lasts: 1,
			want: want{state: report.StateFailed, msg: "index: list pods: timeout"}},
		{name: "its lists failing", obj: newManager(idles), listed: listed, act: fakeActivity{last: old, indexed: true, readErr: errors.New("list jobs: timeout")}, lists: 1, lasts: 1, reads: 1,
			want: want{state: report.StateFailed, msg: "list jobs: timeout"}},
		{name: "held", obj: newManager(idles), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, act: fakeActivity{last: old, indexed: true, read: old}, lists: 1, want: whileHeld},
		{name: "frozen", obj: newManager(idles), listed: listed, frozen: true, act: fakeActivity{last: old, indexed: true, read: old}, lists: 1,
			want: unread("in a freeze; frozen until 2026-11-23T15:00:00Z (--freeze)", timeAt(3*time.Hour))},
		{name: "beyond --max-actions", obj: newManager(idles), listed: listed, budget: []bool{true}, act: fakeActivity{last: old, indexed: true, read: old}, lists: 1,
			want: unread("once --max-actions 5 is reached", nil)},
		{name: "--max-actions reached once the index was read", obj: newManager(idles), listed: listed, budget: []bool{false, true}, act: fakeActivity{last: old, indexed: true, read: recent}, lists: 1, lasts: 1, want: fires},
	})
}
