package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// A revert fight is the fighter's to pay for: 60 workloads of a namespace
// asleep, each woken by a field manager of its own, are put back to sleep
// at most execute.MaxResleep a sweep, the rest by the next sweep, and each
// sweep tells it in one Event, which names three field managers and counts
// the rest, however many managers keep the namespace asleep (before: one
// Event per field manager and a Slept, 61 in the sweep for one manager, and
// all 60 written at once).
func TestSleepUndoneByManyIsBounded(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	const n = 60
	for i := range n {
		createDeployment(t, ns, fmt.Sprintf("w%02d", i), 1)
	}
	createManager(t, managerObj(ns, ns, ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))
	createManager(t, managerObj(ns, "too", ns, []any{sleepPolicy(-time.Hour, 2*time.Hour)}, targeting(ns)))
	args := []string{"-l", caseLabel + "=" + ns}
	wantState(t, e.Sweep(t, args...), ns, ns, report.StateFired)
	// one, the other: the entries of the two managers, the one that told
	// the namespace put back to sleep first.
	oneAndOther := func(res nsmantest.Result) (report.Entry, report.Entry) {
		t.Helper()
		one, other := res.Entry(t, ns, ns), res.Entry(t, ns, "too")
		if one.State != report.StateFired {
			one, other = other, one
		}
		if one.State != report.StateFired || other.State != report.StateAsleep || len(other.Undone) > 0 {
			t.Fatalf("entries %s %q and %s %q (undone %q): want one fired, the other asleep, naming no one", one.State, one.Message, other.State, other.Message, other.Undone)
		}
		return one, other
	}
	for i := range n {
		if _, err := shared.Admin.AppsV1().Deployments(ns).Patch(t.Context(), fmt.Sprintf("w%02d", i), types.MergePatchType, []byte(`{"spec":{"replicas":2}}`),
			metav1.PatchOptions{FieldManager: fmt.Sprintf("fighter-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	newEvents := func() []string {
		t.Helper()
		list, err := shared.Admin.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range list.Items {
			if !seen[ev.Name] && ev.Regarding.Kind == "NamespaceManager" {
				seen[ev.Name] = true
				out = append(out, ev.Reason+": "+ev.Note)
			}
		}
		return out
	}
	newEvents()
	done := len(deploymentPatches(t, e, ns))

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	back, _ := oneAndOther(res)
	if len(back.Undone) != n || !strings.HasPrefix(back.Undone[0], "fighter-00: Deployment/w00") {
		t.Errorf("undone %q: want each of the %d field managers named with what it woke", back.Undone, n)
	}
	left := fmt.Sprintf("%d more awake, left to the next sweeps", n-execute.MaxResleep)
	if !slices.ContainsFunc(back.Effects, func(s string) bool { return strings.HasPrefix(s, left) }) {
		t.Errorf("effects %q: want one saying %q", back.Effects, left)
	}
	want := fmt.Sprintf("SleepUndone: woken by fighter-00, fighter-01, fighter-02 and 57 more while namespace %s was asleep; %d put back to sleep, %d more left awake to the next sweeps",
		ns, execute.MaxResleep, n-execute.MaxResleep)
	if told := newEvents(); len(told) != 1 || told[0] != want {
		t.Errorf("%d Events on the managers in the sweep that put the workloads back to sleep, the first %q; want one, %q",
			len(told), told[:min(len(told), 3)], want)
	}
	first := deploymentPatches(t, e, ns)[done:]
	applied := appliedTo(first)
	if len(applied) != execute.MaxResleep || len(distinct(first)) != execute.MaxResleep {
		t.Errorf("the sweep patched %d Deployments (applied to %d); want %d, execute.MaxResleep", len(distinct(first)), len(applied), execute.MaxResleep)
	}

	done += len(first)
	res = e.Sweep(t, args...)
	wantCode(t, res, 0)
	oneAndOther(res)
	second := appliedTo(deploymentPatches(t, e, ns)[done:])
	if len(second) != n-execute.MaxResleep || len(distinct(append(applied, second...))) != n {
		t.Errorf("the next sweep applied patches to %d Deployments, %d of all in the two; want the %d left, all %d", len(second), len(distinct(append(applied, second...))), n-execute.MaxResleep, n)
	}
	if told := newEvents(); len(told) != 1 || !strings.HasPrefix(told[0], "SleepUndone: ") || !strings.HasSuffix(told[0], " was asleep; put back to sleep") {
		t.Errorf("Events in the next sweep %q, want one SleepUndone, none left awake", told)
	}
	for i := range n {
		wantWorkload(t, ns, fmt.Sprintf("w%02d", i), 0, "2")
	}
	res = e.Sweep(t, args...)
	wantState(t, res, ns, ns, report.StateAsleep)
	wantState(t, res, ns, "too", report.StateAsleep)
}

// deploymentPatches are nsman's patches so far to the Deployments of ns, as
// "NAME CODE".
func deploymentPatches(t *testing.T, e *nsmantest.Env, ns string) []string {
	t.Helper()
	var out []string
	for _, w := range e.Writes(t) {
		if w.Namespace == ns && w.Resource == "deployments" && w.Verb == "patch" {
			out = append(out, fmt.Sprintf("%s %d", w.Name, w.Code))
		}
	}
	return out
}

// appliedTo are the names of patches that applied.
func appliedTo(patches []string) []string {
	var out []string
	for _, p := range patches {
		if name, ok := strings.CutSuffix(p, " 200"); ok {
			out = append(out, name)
		}
	}
	return out
}

// distinct are the names patches name, each once.
func distinct(patches []string) []string {
	names := map[string]bool{}
	for _, p := range patches {
		name, _, _ := strings.Cut(p, " ")
		names[name] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// Under --max-actions, a namespace put back to sleep takes one place, and
// the places go round-robin across namespaces as any action's: with one
// place, each sweep puts one namespace back and defers the others, until
// all are asleep again.
func TestResleepTakesAPlaceUnderMaxActions(t *testing.T) {
	e := setup(t)
	caseID := shared.Namespace(t)
	namespaces := []string{shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)}
	for _, ns := range namespaces {
		createDeployment(t, ns, "web", 1)
		createDeployment(t, ns, "api", 1)
		createManager(t, managerObj(ns, ns, caseID, []any{sleepPolicy(-time.Hour, 2*time.Hour)}))
	}
	args := []string{"-l", caseLabel + "=" + caseID}
	res := e.Sweep(t, args...)
	for _, ns := range namespaces {
		wantState(t, res, ns, ns, report.StateFired)
		for _, name := range []string{"web", "api"} {
			if _, err := shared.Admin.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, []byte(`{"spec":{"replicas":2}}`),
				metav1.PatchOptions{FieldManager: "fighter"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	reslept := map[string]bool{}
	for sweepNo := range len(namespaces) {
		res := e.Sweep(t, append(args, "--max-actions", "1")...)
		wantCode(t, res, 0)
		var fired []string
		for _, ns := range namespaces {
			switch entry := res.Entry(t, ns, ns); {
			case entry.State == report.StateFired:
				fired = append(fired, ns)
				reslept[ns] = true
			case reslept[ns] && entry.State != report.StateAsleep, !reslept[ns] && entry.State != report.StateDeferred:
				t.Errorf("sweep %d: %s %s %q; want asleep once put back, deferred before", sweepNo, ns, entry.State, entry.Message)
			}
		}
		if len(fired) != 1 {
			t.Errorf("sweep %d put %q back to sleep; want one namespace, --max-actions 1", sweepNo, fired)
		}
	}
	for _, ns := range namespaces {
		wantWorkload(t, ns, "web", 0, "2")
		wantWorkload(t, ns, "api", 0, "2")
	}
}

// A tenant's own SLEEP manager keeps no enforce rule from putting its
// namespace back to sleep: the manager, which selects Deployments by a
// label none has and goes first (managers are carried out while listed,
// rules after), writes nothing, and the rule puts the woken Deployments
// back, at most execute.MaxResleep a sweep in all, told in one SleepUndone
// Event a sweep (before: the manager took the namespace, and the rule,
// skipped, said another had put it back; the Deployments stayed awake).
func TestTenantManagerKeepsNoRuleFromPuttingBack(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	ns := labelled(t, caseID, 1)[0]
	const n = execute.MaxResleep + 10
	for i := range n {
		createDeployment(t, ns, fmt.Sprintf("w%02d", i), 1)
	}
	decoy := sleepPolicy(-time.Hour, 2*time.Hour)
	decoy["action"] = map[string]any{"type": "SLEEP", "params": map[string]any{"selectors": []any{
		map[string]any{"kind": "Deployment", "labels": map[string]any{"x": "none"}}}}}
	createManager(t, managerObj(ns, "decoy", caseID, []any{decoy}, targeting(ns)))
	createManager(t, managerObj(home, "nights", caseID, []any{sleepPolicy(-time.Hour, 2*time.Hour)}, selecting(caseID),
		func(spec map[string]any) { spec["enforce"] = true }))
	// One at a time, the manager first, as the attack has it every sweep.
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--concurrency", "1"}
	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	wantState(t, res, ns, "decoy", report.StateFired)
	wantPairs(t, res, home, "nights", []string{ns}, report.StateFired, "the window opened")
	for i := range n {
		wantWorkload(t, ns, fmt.Sprintf("w%02d", i), 0, "1")
	}

	undoneEvents := func() int {
		t.Helper()
		return sleepEvents(t, ns, "decoy", "SleepUndone") + sleepEvents(t, home, "nights", "SleepUndone")
	}
	for i := range n {
		if _, err := shared.Admin.AppsV1().Deployments(ns).Patch(t.Context(), fmt.Sprintf("w%02d", i), types.MergePatchType, []byte(`{"spec":{"replicas":2}}`),
			metav1.PatchOptions{FieldManager: "fighter"}); err != nil {
			t.Fatal(err)
		}
	}
	// The first sweep puts back MaxResleep, the second the rest.
	var applied []string
	for sweepNo := range 2 {
		done, told := len(deploymentPatches(t, e, ns)), undoneEvents()
		res := e.Sweep(t, args...)
		wantCode(t, res, 0)
		if d := res.Entry(t, ns, "decoy"); d.State != report.StateAsleep || len(d.Undone) > 0 || len(d.Effects) > 0 {
			t.Errorf("sweep %d: the tenant's manager %s %q, effects %q, undone %q; want asleep, writing and naming nothing", sweepNo, d.State, d.Message, d.Effects, d.Undone)
		}
		if p := res.Pair(t, home, "nights", ns); p.State != report.StateFired || len(p.Undone) == 0 {
			t.Errorf("sweep %d: the rule on %s: %s %q, undone %q; want fired, naming who woke them", sweepNo, ns, p.State, p.Message, p.Undone)
		}
		patches := deploymentPatches(t, e, ns)[done:]
		if len(distinct(patches)) > execute.MaxResleep || len(appliedTo(patches)) > execute.MaxResleep {
			t.Errorf("sweep %d patched %d Deployments of %s (%d patches applied); want at most %d, execute.MaxResleep",
				sweepNo, len(distinct(patches)), ns, len(appliedTo(patches)), execute.MaxResleep)
		}
		if got := undoneEvents() - told; got != 1 {
			t.Errorf("sweep %d: %d SleepUndone Events; want one", sweepNo, got)
		}
		applied = append(applied, appliedTo(patches)...)
	}
	if len(distinct(applied)) != n {
		t.Errorf("two sweeps put %d Deployments back to sleep; want all %d", len(distinct(applied)), n)
	}
	for i := range n {
		wantWorkload(t, ns, fmt.Sprintf("w%02d", i), 0, "2")
	}
}
