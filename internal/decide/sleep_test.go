package decide

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func nsWake(d time.Duration) func(*cluster.Namespace) {
	return func(ns *cluster.Namespace) { ns.Wake = at(d) }
}

func managerWake(d time.Duration) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		obj.SetAnnotations(map[string]string{status.WakeAnnotation: at(d)})
	}
}

// A SLEEP policy puts its target to sleep while it holds and wakes it once
// it does not: the record says which policy put it to sleep. A hold keeps
// either from happening, a sleep that failed part-way is completed, a
// target asleep by a policy since removed wakes, and a DELETE after the
// SLEEP fires while asleep.
func TestEvaluateManagerSleep(t *testing.T) {
	asleepBy := func(name string, partial bool) status.Status {
		return status.Status{Progress: status.Progress{Asleep: &status.Asleep{Policy: name, Since: now.Add(-time.Hour), Partial: partial}}}
	}
	holds := policies(pol("nights", ttl(3600), sleepAction))
	waits := policies(pol("nights", ttl(3*3600), sleepAction))
	listed := []cluster.Namespace{targetNS()}
	plan := func(policy, reason string, wake bool) *wantPlan {
		return &wantPlan{step: StepAct, policy: policy, generation: 3, reason: reason, name: target, uid: "ns-uid-1", wake: wake}
	}
	runManagerCases(t, []managerCase{
		{name: "awake, the policy holds: sleep", obj: newManager(holds), listed: listed, lists: 1,
			want: want{policy: "nights", plan: plan("nights", "TTL 1h elapsed at 2026-11-23T11:00:00Z", false)}},
		{name: "asleep, the policy holds: asleep", obj: newManager(holds), stored: asleepBy("nights", false), listed: listed, lists: 1,
			want: want{state: report.StateAsleep, msg: `asleep since 2026-11-23T11:00:00Z (policy "nights"); `}},
		{name: "asleep, the policy no longer holds: wake", obj: newManager(waits), stored: asleepBy("nights", false), listed: listed, lists: 1,
			want: want{policy: "nights", plan: plan("nights", "TTL 3h elapses", true)}},
		{name: "awake, the policy does not hold: waiting", obj: newManager(waits), listed: listed, lists: 1,
			want: want{state: report.StateWaiting, msg: "TTL 3h elapses at 2026-11-23T13:00:00Z", due: timeAt(time.Hour)}},
		{name: "asleep part-way, the policy holds: the rest sleeps", obj: newManager(holds), stored: asleepBy("nights", true), listed: listed, lists: 1,
			want: want{policy: "nights", plan: plan("nights", "the last sleep failed part-way: the rest sleeps now", false)}},
		{name: "asleep part-way, the policy no longer holds: wake", obj: newManager(waits), stored: asleepBy("nights", true), listed: listed, lists: 1,
			want: want{policy: "nights", plan: plan("nights", "TTL 3h elapses", true)}},
		{name: "asleep by a policy since removed: wake", obj: newManager(), stored: asleepBy("old", false), listed: []cluster.Namespace{targetNS(func(ns *cluster.Namespace) { ns.Created = now })}, lists: 1,
			want: want{policy: "old", plan: plan("old", `policy "old" that put the namespace to sleep is gone: wake`, true)}},
		{name: "asleep, a wake held", obj: newManager(waits), stored: asleepBy("nights", false), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1,
			want: want{state: report.StateAsleep, msg: `policy "nights" would wake the namespace, but namespace preview-7 is held until ` + at(time.Hour), due: timeAt(time.Hour), heldUntil: timeAt(time.Hour)}},
		{name: "awake, a sleep held", obj: newManager(holds), listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1,
			want: want{state: report.StateWaiting, msg: `policy "nights" holds, but namespace preview-7 is held until ` + at(time.Hour), due: timeAt(time.Hour), heldUntil: timeAt(time.Hour)}},
		{name: "asleep, woken on demand: wake", obj: newManager(holds), stored: asleepBy("nights", false), listed: []cluster.Namespace{targetNS(nsWake(time.Hour))}, lists: 1,
			want: want{policy: "nights", plan: plan("nights", "woken until "+at(time.Hour)+" by namespace preview-7 (nsman.k8s.consol.de/wake-until)", true)}},
		{name: "awake, woken on demand by the manager: waiting until the wake ends", obj: newManager(holds, managerWake(time.Hour)), listed: listed, lists: 1,
			want: want{state: report.StateWaiting, msg: "woken until " + at(time.Hour) + " by manager nsman/cleanup", due: timeAt(time.Hour)}},
		{name: "asleep, a wake beyond --max-hold ignored", obj: newManager(holds), stored: asleepBy("nights", false), listed: []cluster.Namespace{targetNS(nsWake(31 * 24 * time.Hour))}, lists: 1,
			want: want{state: report.StateAsleep, msg: "; hold ignored: nsman.k8s.consol.de/wake-until on namespace preview-7 ends " + at(31*24*time.Hour) + ", more than --max-hold 30d ahead"}},
		{name: "the expired claim of a wake is completed as a wake", obj: newManager(waits), listed: listed, lists: 1,
			stored: status.Status{Progress: status.Progress{Asleep: &status.Asleep{Policy: "nights", Since: now.Add(-time.Hour)},
				Claim: &status.Claim{Policy: "nights", Action: "SLEEP", Sweep: "dead", Expires: now.Add(-time.Minute), Generation: 3, TargetUID: "ns-uid-1", Wake: true}}},
			want: want{policy: "nights", plan: &wantPlan{step: StepCompleteClaim, policy: "nights", generation: 3, reason: "completing the expired claim of sweep dead", name: target, uid: "ns-uid-1", wake: true}}},
		{name: "the expired claim of a sleep is completed as a sleep", obj: newManager(holds), listed: listed, lists: 1,
			stored: status.Status{Progress: status.Progress{Claim: &status.Claim{Policy: "nights", Action: "SLEEP", Sweep: "dead", Expires: now.Add(-time.Minute), Generation: 3, TargetUID: "ns-uid-1"}}},
			want:   want{policy: "nights", plan: &wantPlan{step: StepCompleteClaim, policy: "nights", generation: 3, reason: "completing the expired claim of sweep dead", name: target, uid: "ns-uid-1"}}},
		{name: "asleep, a DELETE after the SLEEP holds", obj: newManager(policies(pol("nights", ttl(3600), sleepAction), pol("expire", ttl(7200), deleteAction))),
			stored: asleepBy("nights", false), listed: listed, lists: 1,
			want: want{policy: "expire", plan: plan("expire", "TTL 2h elapsed", false)}},
	})
}

// A target asleep whose workloads are awake again (or new) is put back to
// sleep, by the policy it sleeps by, with no new transition: the entry
// names who woke them, but not the new ones. What cannot be read is said
// and changes nothing; a freeze reads nothing.
func TestEvaluateManagerResleep(t *testing.T) {
	asleepBy := status.Status{Progress: status.Progress{Asleep: &status.Asleep{Policy: "nights", Since: now.Add(-time.Hour)}}}
	selective := policies(pol("nights", ttl(3600), map[string]any{"type": "SLEEP", "params": map[string]any{"selectors": []any{
		map[string]any{"kind": "deployment"}, map[string]any{"kind": "Rollout.argoproj.io"}}}}))
	listed := []cluster.Namespace{targetNS()}
	resleep := func(reason string) *wantPlan {
		return &wantPlan{step: StepAct, policy: "nights", generation: 3, reason: reason, name: target, uid: "ns-uid-1", resleep: true}
	}
	asleepMsg := `asleep since 2026-11-23T11:00:00Z (policy "nights"); `
	toOne := policies(pol("nights", ttl(3600), map[string]any{"type": "SLEEP", "params": map[string]any{"replicas": int64(1)}}))
	for _, c := range []struct {
		managerCase
		undone []string
		kinds  []string
		to     policy.SleepTo
	}{
		{managerCase: managerCase{name: "asleep to 1 replica: asked what is above 1", obj: newManager(toOne), stored: asleepBy, listed: listed, lists: 1, awake: &fakeAwake{},
			want: want{state: report.StateAsleep, msg: asleepMsg}},
			kinds: []string{}, to: policy.SleepTo{Replicas: 1}},
		{managerCase: managerCase{name: "undone by kubectl, and a new one: back to sleep", obj: newManager(selective), stored: asleepBy, listed: listed, lists: 1,
			awake: &fakeAwake{awake: []string{"kubectl: Deployment/web", "new: Deployment/api"}},
			want:  want{policy: "nights", plan: resleep(`asleep since 2026-11-23T11:00:00Z (policy "nights"), but awake: kubectl: Deployment/web; new: Deployment/api; back to sleep`)}},
			undone: []string{"kubectl: Deployment/web"}, kinds: []string{"Deployment", "Rollout.argoproj.io"}},
		{managerCase: managerCase{name: "only new ones: back to sleep, nobody undid it", obj: newManager(selective), stored: asleepBy, listed: listed, lists: 1,
			awake: &fakeAwake{awake: []string{"new: Deployment/api"}},
			want:  want{policy: "nights", plan: resleep("but awake: new: Deployment/api; back to sleep")}},
			kinds: []string{"Deployment", "Rollout.argoproj.io"}},
		{managerCase: managerCase{name: "more awake than one read names, none of them named: back to sleep", obj: newManager(selective), stored: asleepBy, listed: listed, lists: 1,
			awake: &fakeAwake{more: true},
			want:  want{policy: "nights", plan: resleep("but awake: more past what one read names; back to sleep")}},
			kinds: []string{"Deployment", "Rollout.argoproj.io"}},
		{managerCase: managerCase{name: "more awake than one read names: back to sleep, the named ones undone", obj: newManager(selective), stored: asleepBy, listed: listed, lists: 1,
			awake: &fakeAwake{awake: []string{"kubectl: Deployment/web"}, more: true},
			want:  want{policy: "nights", plan: resleep("but awake: kubectl: Deployment/web; more past what one read names; back to sleep")}},
			undone: []string{"kubectl: Deployment/web"}, kinds: []string{"Deployment", "Rollout.argoproj.io"}},
		{managerCase: managerCase{name: "all asleep", obj: newManager(selective), stored: asleepBy, listed: listed, lists: 1, awake: &fakeAwake{},
			want: want{state: report.StateAsleep, msg: asleepMsg}},
			kinds: []string{"Deployment", "Rollout.argoproj.io"}},
		{managerCase: managerCase{name: "unknown: asleep, said", obj: newManager(policies(pol("nights", ttl(3600), sleepAction))), stored: asleepBy, listed: listed, lists: 1,
			awake: &fakeAwake{err: errors.New("list deployments.apps: forbidden")},
			want:  want{state: report.StateAsleep, msg: "; whether its workloads are still asleep is not known: list deployments.apps: forbidden"}},
			kinds: []string{}},
		{managerCase: managerCase{name: "asleep by a policy that is a DELETE now: back to sleep by the SLEEP policy, never the DELETE",
			obj: newManager(policies(pol("nights", ttl(3*3600), deleteAction), pol("weekends", ttl(3600), sleepAction))), stored: asleepBy, listed: listed, lists: 1,
			awake: &fakeAwake{awake: []string{"kubectl: Deployment/web"}},
			want:  want{policy: "weekends", plan: &wantPlan{step: StepAct, policy: "weekends", generation: 3, reason: "back to sleep", name: target, uid: "ns-uid-1", resleep: true}}},
			undone: []string{"kubectl: Deployment/web"}, kinds: []string{}},
		{managerCase: managerCase{name: "frozen: nothing read", obj: newManager(selective), stored: asleepBy, listed: listed, lists: 1, frozen: true,
			awake: &fakeAwake{awake: []string{"kubectl: Deployment/web"}},
			want:  want{state: report.StateAsleep, msg: asleepMsg}}},
		{managerCase: managerCase{name: "held: asleep, said", obj: newManager(selective), stored: asleepBy, listed: []cluster.Namespace{targetNS(nsHold(time.Hour))}, lists: 1,
			awake: &fakeAwake{awake: []string{"kubectl: Deployment/web"}},
			want:  want{state: report.StateAsleep, msg: "but awake: kubectl: Deployment/web, but namespace preview-7 is held until " + at(time.Hour), due: timeAt(time.Hour), heldUntil: timeAt(time.Hour)}},
			undone: []string{"kubectl: Deployment/web"}, kinds: []string{"Deployment", "Rollout.argoproj.io"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lists := 0
			d := c.evaluator(&lists).EvaluateManager(t.Context(), c.obj, c.stored, c.pods.check)
			checkDecision(t, d, c.want)
			if !slices.Equal(d.Entry.Undone, c.undone) {
				t.Errorf("undone %q, want %q", d.Entry.Undone, c.undone)
			}
			if c.kinds == nil && len(c.awake.asked) != 0 || c.kinds != nil && (len(c.awake.asked) != 1 || !slices.Equal(c.awake.asked[0], c.kinds)) {
				t.Errorf("asked about kinds %q, want %q", c.awake.asked, c.kinds)
			}
			if c.kinds != nil && len(c.awake.to) == 1 && !reflect.DeepEqual(c.awake.to[0], c.to) {
				t.Errorf("asked about what is above %+v, want %+v", c.awake.to[0], c.to)
			}
		})
	}
}
