package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// A SLEEP policy's transition is claimed, acted and recorded as any
// action, but is never a stage nor final: its record says whether the
// target is asleep (part-way when the sleep failed), and a wake that
// failed leaves it asleep. A freeze keeps an asleep target asleep.
func TestCarryOutSleep(t *testing.T) {
	deployments := func(replicas, record string) string {
		annotations := ""
		if record != "" {
			annotations = `,"annotations":{"` + status.ReplicasAnnotation + `":"` + record + `"}`
		}
		return `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"web","namespace":"team-a","resourceVersion":"1"` + annotations + `},"spec":{"replicas":` + replicas + `}}]}`
	}
	boom := errors.New("admission webhook said no")
	keptAwake := `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"api","namespace":"team-a","resourceVersion":"1","labels":{"` + status.KeepAwakeLabel + `":"true"}},"spec":{"replicas":1}}]}`
	for _, tt := range []struct {
		name     string
		wake     bool
		resleep  bool
		frozen   bool
		listed   string
		patchErr error
		// want: the entry's state and effects, the claims, and what the
		// record keeps of the sleep.
		state   report.State
		effect  string
		claims  int
		writes  int
		asleep  *status.Asleep
		woke    bool
		partial bool
	}{
		{name: "sleep", listed: deployments("2", ""), state: report.StateFired, effect: "scale Deployment/web from 2 to 0", claims: 1, writes: 1,
			asleep: &status.Asleep{Policy: "nights", Since: sweepNow}},
		{name: "a sleep that failed: asleep part-way", listed: deployments("2", ""), patchErr: boom, state: report.StateFailed, claims: 1, writes: 1,
			asleep: &status.Asleep{Policy: "nights", Since: sweepNow, Partial: true}},
		{name: "wake", wake: true, listed: deployments("0", "2"), state: report.StateFired, effect: "scale Deployment/web from 0 to 2", claims: 1, writes: 1, woke: true},
		{name: "a wake that failed: still asleep", wake: true, listed: deployments("0", "2"), patchErr: boom, state: report.StateFailed, claims: 1, writes: 1},
		{name: "a wake in a freeze: still asleep", wake: true, frozen: true, listed: deployments("0", "2"), state: report.StateAsleep, writes: 1},
		{name: "back to sleep, unclaimed, the sleep kept as it was", resleep: true, listed: deployments("3", "2"), state: report.StateFired, effect: "scale Deployment/web from 3 to 0", writes: 1},
		{name: "back to sleep, but nothing is awake by now: nothing written", resleep: true, listed: deployments("0", "2"), state: report.StateAsleep},
		{name: "back to sleep, but only a workload kept awake is: nothing written", resleep: true, listed: keptAwake, state: report.StateAsleep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bodies := clustertest.DiscoveryBodies()
			bodies["/apis/apps/v1/namespaces/team-a/deployments"] = tt.listed
			w := newFakeWriter()
			w.done, w.patchErr = report.StateFired, tt.patchErr
			reads := emptyReader(t)
			reads.Clients.Kube = clustertest.APIServer(t, bodies)
			x := newExecutor(t, w, reads)
			if tt.frozen {
				frozen(x)
			}
			rec := &fakeRecord{}
			e := x.CarryOut(t.Context(), rec, decision(sleeping(tt.wake), func(d *decide.Decision) { d.Plan.Resleep = tt.resleep }))
			if e.State != tt.state || tt.effect != "" && (len(e.Effects) != 1 || e.Effects[0] != tt.effect) || e.Woke != (tt.wake && !tt.frozen) {
				t.Errorf("entry %s %q (woke %t), effects %q; want %s, %q", e.State, e.Message, e.Woke, e.Effects, tt.state, tt.effect)
			}
			if len(rec.claims) != tt.claims || len(rec.writes) != tt.writes {
				t.Fatalf("%d claims, %d writes; want %d, %d", len(rec.claims), len(rec.writes), tt.claims, tt.writes)
			}
			if tt.writes == 0 {
				return
			}
			if len(rec.claims) > 0 && rec.claims[0].Wake != tt.wake {
				t.Errorf("claimed wake %t, want %t: a sweep completing the claim must know which transition it was", rec.claims[0].Wake, tt.wake)
			}
			o := rec.writes[0]
			if o.Done || o.Stage != "" || o.Woke != tt.woke || !sameAsleep(o.Asleep, tt.asleep) {
				t.Errorf("recorded done %t, stage %q, woke %t, asleep %+v; want not done, no stage, woke %t, asleep %+v", o.Done, o.Stage, o.Woke, o.Asleep, tt.woke, tt.asleep)
			}
		})
	}
}

// A SLEEP without selectors puts to sleep every kind offered, and wakes
// them, even when some are not to be had: a kind found by discovery that
// nsman may not patch (a bare ReplicaSet, under the shipped ClusterRole) is
// never written to, and an API group whose discovery failed is a warning
// of the entry, which is fired. A workload whose sleep is refused anyway
// (403) is a warning too, the target wholly asleep; one whose wake is
// refused (it carries nsman's record) fails the wake, to be tried again.
func TestCarryOutSleepWithoutSelectors(t *testing.T) {
	list := func(kind, apiVersion string, items ...string) string {
		return `{"kind":"` + kind + `List","apiVersion":"` + apiVersion + `","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	}
	item := func(name, replicas, record, owners string) string {
		annotations := ""
		if record != "" {
			annotations = `,"annotations":{"` + status.ReplicasAnnotation + `":"` + record + `"}`
		}
		return `{"metadata":{"name":"` + name + `","namespace":"team-a","resourceVersion":"1"` + annotations + owners + `},"spec":{"replicas":` + replicas + `}}`
	}
	owned := `,"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u","controller":true}]`
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "argoproj.io", Resource: "rollouts"}, "canary", errors.New("an admission webhook said no"))
	for _, wake := range []bool{false, true} {
		t.Run(map[bool]string{false: "sleep", true: "wake"}[wake], func(t *testing.T) {
			replicas, record, effect := "2", "", "scale Deployment/web from 2 to 0"
			if wake {
				replicas, record, effect = "0", "2", "scale Deployment/web from 0 to 2"
			}
			bodies := clustertest.WithUnavailableGroup(t, clustertest.DiscoveryBodies(), "metrics.example.com", "v1beta1")
			bodies[clustertest.Refusal("patch", "apps", "replicasets")] = ""
			bodies["/apis/apps/v1/namespaces/team-a/deployments"] = list("Deployment", "apps/v1", item("web", replicas, record, ""))
			bodies["/apis/apps/v1/namespaces/team-a/replicasets"] = list("ReplicaSet", "apps/v1", item("web-7d9f", "2", "", owned), item("lone", "1", "", ""))
			bodies["/apis/argoproj.io/v1alpha1/namespaces/team-a/rollouts"] = list("Rollout", "argoproj.io/v1alpha1", item("canary", replicas, record, ""))
			w := newFakeWriter()
			w.done, w.patchErrs = report.StateFired, map[string]error{"rollouts": refused}
			reads := emptyReader(t)
			reads.Clients.Kube = clustertest.APIServer(t, bodies)
			x := newExecutor(t, w, reads)
			rec := &fakeRecord{}
			e := x.CarryOut(t.Context(), rec, decision(sleeping(wake), func(d *decide.Decision) { d.Plan.Policy.Action.Selectors = nil }))
			state, want := report.StateFired, []string{"discovery failed for API group(s) metrics.example.com/v1beta1: their kinds were neither put to sleep nor woken",
				"refused (403), left as they were: Rollout/canary"}
			if wake {
				state, want = report.StateFailed, want[:1]
				if !strings.Contains(e.Message, `restore Rollout team-a/canary: rollouts.argoproj.io "canary" is forbidden`) {
					t.Errorf("message %q, want the wake refused named", e.Message)
				}
			}
			if e.State != state || len(e.Effects) != 1 || e.Effects[0] != effect {
				t.Errorf("entry %s %q, effects %q; want %s, %q", e.State, e.Message, e.Effects, state, effect)
			}
			if strings.Join(e.Warnings, "\n") != strings.Join(want, "\n") {
				t.Errorf("warnings %q, want %q", e.Warnings, want)
			}
			if got := strings.Join(w.patched, " "); got != "deployments/web rollouts/canary" {
				t.Errorf("patched %s, want web and canary alone: no ReplicaSet, which nsman may not patch", got)
			}
			// A wake refused leaves the target asleep (not woke), to be woken
			// again; a sleep is whole.
			if len(rec.writes) != 1 || rec.writes[0].Woke || !wake && !sameAsleep(rec.writes[0].Asleep, &status.Asleep{Policy: "nights", Since: sweepNow}) {
				t.Errorf("recorded %+v, want not woke, or asleep wholly", rec.writes)
			}
		})
	}
}

func sameAsleep(a, b *status.Asleep) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Policy == b.Policy && a.Since.Equal(b.Since) && a.Partial == b.Partial
}

// Each transition of a SLEEP policy is a firing of its own: its
// notification's key differs between a sleep and a wake and between
// sweeps, and a sweep completing a claim uses the key of the sweep that
// made it.
func TestNotificationKeyOfASleep(t *testing.T) {
	x := newExecutor(t, newFakeWriter(), emptyReader(t))
	d := decision(sleeping(false))
	sleep := x.notificationKey(d.Manager, d.Plan)
	wake := x.notificationKey(d.Manager, decision(sleeping(true)).Plan)
	completing := decision(sleeping(false), func(d *decide.Decision) { d.Plan.Step, d.Plan.ClaimedBy = decide.StepCompleteClaim, x.SweepID })
	later := newExecutor(t, newFakeWriter(), emptyReader(t))
	later.SweepID = "sweep-2"
	if sleep == wake || sleep != later.notificationKey(completing.Manager, completing.Plan) || sleep == later.notificationKey(d.Manager, d.Plan) {
		t.Errorf("keys: sleep %q, wake %q, completed by a later sweep %q, a later sweep's own %q", sleep, wake,
			later.notificationKey(completing.Manager, completing.Plan), later.notificationKey(d.Manager, d.Plan))
	}
	if plain := decision(); x.notificationKey(plain.Manager, plain.Plan) != firingKey(plain.Manager, plain.Plan) {
		t.Error("the key of another action changed")
	}
}

// Putting a namespace back to sleep writes to at most MaxResleep of its
// workloads in a sweep, the rest counted in the entry, left to the next
// sweeps, whichever subjects keep it asleep: another in the same sweep
// writes nothing more and names no one. A sleep that is a transition has
// no such bound.
func TestResleepBounded(t *testing.T) {
	items := make([]string, 0, MaxResleep+10)
	for i := range MaxResleep + 10 {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"w%02d","namespace":"team-a","resourceVersion":"1","annotations":{%q:"1"}},"spec":{"replicas":1}}`, i, status.ReplicasAnnotation))
	}
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/team-a/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	reads := emptyReader(t)
	reads.Clients.Kube = clustertest.APIServer(t, bodies)
	w := newFakeWriter()
	w.done = report.StateFired
	x := newExecutor(t, w, reads)
	resleep := decision(sleeping(false), func(d *decide.Decision) { d.Plan.Resleep, d.Entry.Undone = true, []string{"kubectl: Deployment/w00"} })
	left := fmt.Sprintf("10 more awake, left to the next sweeps: at most %d are put back to sleep in a namespace per sweep", MaxResleep)
	e := x.CarryOut(t.Context(), &fakeRecord{}, resleep)
	if w.patches != MaxResleep || e.State != report.StateFired || len(e.Effects) != MaxResleep+1 || e.Effects[MaxResleep] != left {
		t.Errorf("put back to sleep: %d patches, entry %s, %d effects %q; want %d patches, fired, the last effect %q", w.patches, e.State, len(e.Effects), e.Effects, MaxResleep, left)
	}
	if e.PutBack != MaxResleep || e.LeftAwake != 10 {
		t.Errorf("entry counts %d put back, %d left awake; want %d and 10", e.PutBack, e.LeftAwake, MaxResleep)
	}
	// Another subject of the namespace, in the same sweep: nothing more,
	// the 50 put back by the first, the other 10 left (the fake API server
	// still lists all 60 awake).
	before := w.patches
	e = x.CarryOut(t.Context(), &fakeRecord{}, resleep)
	left = "10 more awake, left to the next sweeps"
	if got := w.patches - before; got != 0 || e.State != report.StateAsleep || !strings.Contains(e.Message, left) || e.Undone != nil {
		t.Errorf("put back to sleep again in the sweep: %d patches, entry %s %q, undone %q; want none, asleep, %q, no one undone", got, e.State, e.Message, e.Undone, left)
	}
	before = w.patches
	if e := x.CarryOut(t.Context(), &fakeRecord{}, decision(sleeping(false))); w.patches-before != MaxResleep+10 || e.State != report.StateFired {
		t.Errorf("a sleep: %d patches (%s), want %d", w.patches-before, e.State, MaxResleep+10)
	}
}

// awakeList is a list of kind with n workloads named prefix00... of
// namespace team-a, each woken (replicas 1) after a sleep recorded.
func awakeList(kind, prefix string, n int) string {
	items := make([]string, 0, n)
	for i := range n {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"%s%02d","namespace":"team-a","resourceVersion":"1","annotations":{%q:"1"}},"spec":{"replicas":1}}`, prefix, i, status.ReplicasAnnotation))
	}
	return fmt.Sprintf(`{"kind":%q,"apiVersion":"apps/v1","metadata":{},"items":[%s]}`, kind, strings.Join(items, ","))
}

// selectingKind makes the SLEEP policy select kind alone.
func selectingKind(kind string) func(*decide.Decision) {
	return func(d *decide.Decision) { d.Plan.Policy.Action.Selectors = []policy.Selector{{Kind: kind}} }
}

// A subject that puts a namespace back to sleep keeps no other from it:
// each puts back the workloads it selects, from the namespace's MaxResleep
// of the sweep, and the first that wrote alone names who woke them. Before,
// the first to act took the namespace, writing nothing when it selected
// nothing awake, and the others were told it was put back.
func TestResleepBySubjectsOfOtherSelectors(t *testing.T) {
	resleep := func(d *decide.Decision) { d.Plan.Resleep, d.Entry.Undone = true, []string{"kubectl: Deployment/d00"} }
	for _, tt := range []struct {
		name           string
		deployments    int
		statefulSets   int
		first          func(*decide.Decision)
		firstPatches   int
		firstState     report.State
		secondPatches  int
		secondState    report.State
		secondUndone   bool
		secondLeftSaid string
	}{
		{name: "the first selects StatefulSets, none awake: the second puts the Deployments back and tells it", deployments: 3, first: selectingKind(policy.KindStatefulSet),
			firstState: report.StateAsleep, secondPatches: 3, secondState: report.StateFired, secondUndone: true},
		{name: "both put some back, from one budget: the first tells it", deployments: 20, statefulSets: MaxResleep, first: selectingKind(policy.KindStatefulSet),
			firstPatches: MaxResleep, firstState: report.StateFired, secondState: report.StateAsleep,
			secondLeftSaid: "20 more awake, left to the next sweeps"},
		{name: "the first puts back some, the second the rest of the budget", deployments: MaxResleep, statefulSets: 10, first: selectingKind(policy.KindStatefulSet),
			firstPatches: 10, firstState: report.StateFired, secondPatches: MaxResleep - 10, secondState: report.StateAsleep,
			secondLeftSaid: "10 more awake, left to the next sweeps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bodies := clustertest.DiscoveryBodies()
			bodies["/apis/apps/v1/namespaces/team-a/deployments"] = awakeList("DeploymentList", "d", tt.deployments)
			bodies["/apis/apps/v1/namespaces/team-a/statefulsets"] = awakeList("StatefulSetList", "s", tt.statefulSets)
			reads := emptyReader(t)
			reads.Clients.Kube = clustertest.APIServer(t, bodies)
			w := newFakeWriter()
			w.done = report.StateFired
			x := newExecutor(t, w, reads)
			e := x.CarryOut(t.Context(), &fakeRecord{}, decision(sleeping(false), resleep, tt.first))
			if w.patches != tt.firstPatches || e.State != tt.firstState || (e.Undone != nil) != (tt.firstState == report.StateFired) {
				t.Errorf("the first: %d patches, entry %s %q, undone %q; want %d, %s", w.patches, e.State, e.Message, e.Undone, tt.firstPatches, tt.firstState)
			}
			before := w.patches
			e = x.CarryOut(t.Context(), &fakeRecord{}, decision(sleeping(false), resleep))
			if got := w.patches - before; got != tt.secondPatches || e.State != tt.secondState || (e.Undone != nil) != tt.secondUndone ||
				!slices.ContainsFunc(append(e.Effects, e.Message), func(s string) bool { return strings.Contains(s, tt.secondLeftSaid) }) {
				t.Errorf("the second: %d patches, entry %s %q, effects %q, undone %q; want %d, %s, undone %t, saying %q",
					got, e.State, e.Message, e.Effects, e.Undone, tt.secondPatches, tt.secondState, tt.secondUndone, tt.secondLeftSaid)
			}
		})
	}
}

// namingWriter is a fakeWriter that keeps the names of the workloads
// patched.
type namingWriter struct {
	*fakeWriter
	patched []string
}

func (w *namingWriter) PatchWorkload(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte) error {
	w.patched = append(w.patched, name)
	return w.fakeWriter.PatchWorkload(ctx, resource, namespace, name, patch)
}

// The put-back of a namespace starts each minute at another of its
// workloads awake: a tenant who wakes the 50 listed first (aaa-*) again
// before each sweep no longer keeps the others (zzz-*) awake. Sweeps a
// minute apart put them all back within 3, five minutes apart within 6,
// from whichever minute they start (before: never, the same 50 put back
// first in each).
func TestResleepStartMovesEachMinute(t *testing.T) {
	for _, tt := range []struct{ every, sweeps int }{{every: 1, sweeps: 3}, {every: 5, sweeps: 6}} {
		t.Run(fmt.Sprintf("every %d min", tt.every), func(t *testing.T) { resleepRotates(t, tt.every, tt.sweeps) })
	}
}

// resleepRotates plays TestResleepStartMovesEachMinute with sweeps every
// minutes apart: all zzz-* must be put back in sweeps.
func resleepRotates(t *testing.T, every, sweeps int) {
	t.Helper()
	item := func(name string, replicas int) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"team-a","resourceVersion":"1","annotations":{%q:"1"}},"spec":{"replicas":%d}}`, name, status.ReplicasAnnotation, replicas)
	}
	resleep := decision(sleeping(false), func(d *decide.Decision) {
		d.Plan.Resleep, d.Entry.Undone = true, []string{"kubectl: Deployment/aaa-00"}
	})
	for first := range 60 {
		awake := map[string]bool{}
		for i := range MaxResleep {
			awake[fmt.Sprintf("zzz-%02d", i)] = true
		}
		for sweepNo := range sweeps {
			var items []string
			for i := range MaxResleep {
				items = append(items, item(fmt.Sprintf("aaa-%02d", i), 1)) // woken again before each sweep
			}
			for i := range MaxResleep {
				name := fmt.Sprintf("zzz-%02d", i)
				items = append(items, item(name, map[bool]int{true: 1, false: 0}[awake[name]]))
			}
			bodies := clustertest.DiscoveryBodies()
			bodies["/apis/apps/v1/namespaces/team-a/deployments"] = `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
			reads := emptyReader(t)
			reads.Clients.Kube = clustertest.APIServer(t, bodies)
			w := &namingWriter{fakeWriter: newFakeWriter()}
			w.done = report.StateFired
			x := newExecutor(t, w, reads)
			x.Now = sweepNow.Add(time.Duration(first+sweepNo*every) * time.Minute)
			if e := x.CarryOut(t.Context(), &fakeRecord{}, resleep); e.State != report.StateFired || len(w.patched) != MaxResleep {
				t.Fatalf("from minute %d, sweep %d: %s %q, %d patched; want fired, %d", first, sweepNo, e.State, e.Message, len(w.patched), MaxResleep)
			}
			for _, name := range w.patched {
				delete(awake, name)
			}
		}
		if len(awake) > 0 {
			t.Errorf("from minute %d, %d sweeps %d min apart left %d of the zzz-* awake: %q", first, sweeps, every, len(awake), slices.Sorted(maps.Keys(awake)))
		}
	}
}

// A put-back keeps at most maxWoken of a namespace's workloads awake to
// choose its MaxResleep among, the first listed: however many a tenant
// wakes, what a sweep holds of them is bounded, and those past it are
// counted left, as those past MaxResleep are.
func TestResleepKeepsAtMostMaxWoken(t *testing.T) {
	n := maxWoken + MaxResleep
	// A minute whose start, among all n, would put back some past maxWoken.
	now := sweepNow
	for resleepStart(now, n) < maxWoken {
		now = now.Add(time.Minute)
	}
	bodies := clustertest.DiscoveryBodies()
	bodies["/apis/apps/v1/namespaces/team-a/deployments"] = awakeList("DeploymentList", "w", n)
	reads := emptyReader(t)
	reads.Clients.Kube = clustertest.APIServer(t, bodies)
	w := newFakeWriter()
	w.done = report.StateFired
	x := newExecutor(t, w, reads)
	x.Now = now
	resleep := decision(sleeping(false), func(d *decide.Decision) { d.Plan.Resleep, d.Entry.Undone = true, []string{"kubectl: Deployment/w00"} })
	e := x.CarryOut(t.Context(), &fakeRecord{}, resleep)
	if w.patches != MaxResleep || e.PutBack != MaxResleep || e.LeftAwake != n-MaxResleep {
		t.Fatalf("%d patches, entry counts %d put back, %d left; want %d, %d, %d", w.patches, e.PutBack, e.LeftAwake, MaxResleep, MaxResleep, n-MaxResleep)
	}
	for _, name := range w.patched {
		var i int
		if _, err := fmt.Sscanf(name[strings.LastIndex(name, "/w")+2:], "%d", &i); err != nil || i >= maxWoken {
			t.Errorf("put back %s: want only the first %d listed kept to choose among", name, maxWoken)
		}
	}
}

// A namespace of many workloads whose sleep was refused keeps ten of their
// names and counts the rest: what a tenant makes refused sizes no entry.
func TestRefusalsKeepTen(t *testing.T) {
	kind := probe.Kind{Name: "Rollout", Found: true}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "argoproj.io", Resource: "rollouts"}, "x", errors.New("denied"))
	var r refusals
	for i := range 25 {
		w := &Workload{Object: &unstructured.Unstructured{}}
		w.Object.SetName(fmt.Sprintf("w%02d", i))
		if err := r.keep(true, kind, w, forbidden); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.named) != 10 {
		t.Errorf("%d names kept, want 10", len(r.named))
	}
	want := "refused (403), left as they were: Rollout/w00, Rollout/w01, Rollout/w02, Rollout/w03, Rollout/w04, Rollout/w05, Rollout/w06, Rollout/w07, Rollout/w08, Rollout/w09 and 15 more"
	if got := r.warnings(); len(got) != 1 || got[0] != want {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

// A SCALE_DOWN or SLEEP with params.replicas scales a workload above them
// down to them, and frees what the replicas it loses request; one at or
// below them is left as it is, unwritten. Asleep, a workload at them is
// asleep and one scaled above them since is put back; a wake brings the
// recorded count back from them.
func TestApplySleepToReplicas(t *testing.T) {
	item := func(replicas, record, asleepAt string) string {
		annotations := ""
		if record != "" {
			annotations = `,"annotations":{"` + status.ReplicasAnnotation + `":"` + record + `","` + status.ReplicasAsleepAnnotation + `":"` + asleepAt + `"}`
		}
		return `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"web","namespace":"team-a","resourceVersion":"1"` + annotations +
			`},"spec":{"replicas":` + replicas + `,"template":{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"250m"}}}]}}}}]}`
	}
	for _, tt := range []struct {
		name          string
		action        string
		wake, resleep bool
		listed        string
		effects       []string
		freed         string // CPU, "" for nothing counted
		patches       int
	}{
		{name: "SLEEP of 3 to 1", action: policy.ActionSleep, listed: item("3", "", ""), effects: []string{"scale Deployment/web from 3 to 1"}, freed: "500m", patches: 1},
		{name: "SCALE_DOWN of 3 to 1", action: policy.ActionScaleDown, listed: item("3", "", ""), effects: []string{"scale Deployment/web from 3 to 1"}, freed: "500m", patches: 1},
		{name: "SLEEP of 1 to 1: left as it is", action: policy.ActionSleep, listed: item("1", "", ""), freed: "0"},
		{name: "SCALE_DOWN of 0 to 1: not scaled up", action: policy.ActionScaleDown, listed: item("0", "", ""), freed: "0"},
		{name: "back to sleep: scaled to 3 since, put back to 1", action: policy.ActionSleep, resleep: true, listed: item("3", "5", "1"),
			effects: []string{"scale Deployment/web from 3 to 1"}, freed: "500m", patches: 1},
		{name: "back to sleep: at 1, asleep", action: policy.ActionSleep, resleep: true, listed: item("1", "5", "1"), freed: "0"},
		{name: "wake from 1 to the 5 recorded", action: policy.ActionSleep, wake: true, listed: item("1", "5", "1"), effects: []string{"scale Deployment/web from 1 to 5"}, patches: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bodies := clustertest.DiscoveryBodies()
			bodies["/apis/apps/v1/namespaces/team-a/deployments"] = tt.listed
			w := newFakeWriter()
			reads := emptyReader(t)
			reads.Clients.Kube = clustertest.APIServer(t, bodies)
			x := newExecutor(t, w, reads)
			x.SkipReclaim = false
			d := decision(sleeping(tt.wake), func(d *decide.Decision) {
				d.Plan.Policy.Action.Type, d.Plan.Resleep = tt.action, tt.resleep
				d.Plan.Policy.Action.SleepTo = policy.SleepTo{Replicas: 1}
			})
			did, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil)
			freed := ""
			if did.reclaimed != nil {
				freed = did.reclaimed.CPU.String()
			}
			if err != nil || !slices.Equal(did.effects, tt.effects) || freed != tt.freed || w.patches != tt.patches {
				t.Errorf("effects %q, CPU freed %q, %d patches, error %v; want %q, %q, %d", did.effects, freed, w.patches, err, tt.effects, tt.freed, tt.patches)
			}
		})
	}
}

// A SCALE_DOWN or SLEEP with params.loadBalancers parks a Service of type
// LoadBalancer whatever the selectors pick, and counts the load balancer
// freed; without it, no Service is written to. A wake unparks one that
// carries a record, whatever the policy says now.
func TestApplySleepParksLoadBalancers(t *testing.T) {
	service := func(typ, record string) string {
		annotations := ""
		if record != "" {
			annotations = `,"annotations":{"` + status.LoadBalancerAnnotation + `":` + jsonString(record) + `}`
		}
		return `{"kind":"ServiceList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"web","namespace":"team-a","resourceVersion":"1"` + annotations +
			`},"spec":{"type":"` + typ + `","externalTrafficPolicy":"Local","ports":[{"port":80,"nodePort":30080}]}}]}`
	}
	for _, tt := range []struct {
		name          string
		action        string
		loadBalancers bool
		selectors     []policy.Selector
		wake          bool
		listed        string
		effects       []string
		loadBalancer  int
		patches       int
	}{
		{name: "SLEEP parks", action: policy.ActionSleep, loadBalancers: true, listed: service("LoadBalancer", ""),
			effects: []string{"park Service/web as ClusterIP"}, loadBalancer: 1, patches: 1},
		{name: "SLEEP of a Deployment's selector parks all the same", action: policy.ActionSleep, loadBalancers: true, selectors: []policy.Selector{{Kind: policy.KindDeployment}},
			listed: service("LoadBalancer", ""), effects: []string{"park Service/web as ClusterIP"}, loadBalancer: 1, patches: 1},
		{name: "SCALE_DOWN parks", action: policy.ActionScaleDown, loadBalancers: true, listed: service("LoadBalancer", ""),
			effects: []string{"park Service/web as ClusterIP"}, loadBalancer: 1, patches: 1},
		{name: "SLEEP without loadBalancers leaves it", action: policy.ActionSleep, listed: service("LoadBalancer", "")},
		{name: "SLEEP of a ClusterIP leaves it", action: policy.ActionSleep, loadBalancers: true, listed: service("ClusterIP", "")},
		{name: "wake unparks, loadBalancers or not", action: policy.ActionSleep, wake: true, listed: service("ClusterIP", `{"type":"LoadBalancer","externalTrafficPolicy":"Local"}`),
			effects: []string{"unpark Service/web as LoadBalancer"}, patches: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bodies := clustertest.DiscoveryBodies()
			bodies["/api/v1/namespaces/team-a/services"] = tt.listed
			w := newFakeWriter()
			reads := emptyReader(t)
			reads.Clients.Kube = clustertest.APIServer(t, bodies)
			x := newExecutor(t, w, reads)
			x.SkipReclaim = false
			d := decision(sleeping(tt.wake), func(d *decide.Decision) {
				d.Plan.Policy.Action.Type, d.Plan.Policy.Action.Selectors = tt.action, tt.selectors
				d.Plan.Policy.Action.SleepTo = policy.SleepTo{LoadBalancers: tt.loadBalancers}
			})
			did, err := x.apply(t.Context(), d.Manager, &fakeRecord{}, d.Plan, nil)
			freed := 0
			if did.reclaimed != nil {
				freed = did.reclaimed.LoadBalancers
			}
			if err != nil || !slices.Equal(did.effects, tt.effects) || freed != tt.loadBalancer || w.patches != tt.patches {
				t.Errorf("effects %q, %d load balancers freed, %d patches, error %v; want %q, %d, %d", did.effects, freed, w.patches, err, tt.effects, tt.loadBalancer, tt.patches)
			}
		})
	}
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
