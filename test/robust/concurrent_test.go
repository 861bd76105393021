package robust

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

func buildNsman(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nsman")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nsman/nsman/cmd/nsman").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestConcurrentSweepsActOnce starts four sweeps together over 200 due
// managers of all three actions (eight over 1,000 under NSMAN_LONG=1):
// the sweeps overlap in time, as their API requests show, and every action
// is applied exactly once.
func TestConcurrentSweepsActOnce(t *testing.T) {
	managers, sweeps := nsmantest.Scale(200, 1000), nsmantest.Scale(4, 8)
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()
	label := "nsman.test/concurrent"
	run := fmt.Sprint(managers)

	actions := []string{"DELETE", "SCALE_DOWN", "WEBHOOK"}
	namespaces := make([]string, managers)
	// parallel runs f(i) for each manager i, sixteen at a time, and fails
	// the test on the first error.
	parallel := func(f func(i int) error) {
		t.Helper()
		inParallel(t, managers, f)
	}
	parallel(func(i int) error {
		ns, err := shared.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "concurrent-"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		namespaces[i] = ns.Name
		if actions[i%3] == "SCALE_DOWN" {
			_, err := shared.Admin.AppsV1().Deployments(ns.Name).Create(ctx, nsmantest.Deployment("web", 3), metav1.CreateOptions{})
			return err
		}
		return nil
	})
	// The managers are tenants': each webhook goes to Service "sink" of the
	// manager's own namespace (made here, where the test may fail at once).
	urls := make([]string, managers)
	for i, ns := range namespaces {
		if actions[i%3] == "WEBHOOK" {
			urls[i] = recv.ServiceURL(t, shared.Admin, ns, "sink") + "/" + ns
		}
	}
	parallel(func(i int) error {
		ns := namespaces[i]
		action := map[string]any{"type": actions[i%3]}
		if actions[i%3] == "WEBHOOK" {
			action["params"] = map[string]any{"url": urls[i]}
		}
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ns, "name": ns, "labels": map[string]any{label: run}},
			"spec": map[string]any{"policies": []any{map[string]any{
				"name":      "act at once",
				"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
				"action":    action,
			}}},
		}}
		_, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(ctx, m, metav1.CreateOptions{})
		return err
	})

	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	// The sweeps start as the processes do, not held to start together, so
	// that some list the managers while others are already acting on them.
	reports := raceSweeps(t, e, bin, label+"="+run, sweeps)
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}

	fired := 0
	for _, r := range reports {
		fired += r.Summary.States[report.StateFired]
	}
	if fired != managers {
		t.Errorf("the sweeps fired %d actions in all, want %d", fired, managers)
		// What each sweep said of a manager that more than one fired.
		said := map[string][]string{}
		firings := map[string]int{}
		for i, r := range reports {
			for _, entry := range r.Entries {
				id := entry.Namespace + "/" + entry.Name
				said[id] = append(said[id], fmt.Sprintf("sweep %d: %s %s (%s) %q", i, entry.State, entry.Action, entry.Message, entry.Effects))
				if entry.State == report.StateFired {
					firings[id]++
				}
			}
		}
		for id, n := range firings {
			if n > 1 {
				t.Errorf("%s fired by %d sweeps:\n%s", id, n, strings.Join(said[id], "\n"))
			}
		}
	}
	applied := countActions(t, after[len(before):], recv.Deliveries())
	deletes, scales, hooks := applied.deletes, applied.scales, applied.deliveries
	for i, ns := range namespaces {
		var got int
		switch actions[i%3] {
		case "DELETE":
			got = deletes[ns]
		case "SCALE_DOWN":
			got = scales[ns]
		case "WEBHOOK":
			got = hooks[ns]
		}
		if got != 1 {
			t.Errorf("%s %s applied %d times, want once", actions[i%3], ns, got)
		}
		// A manager that deleted its own namespace goes with it.
		if actions[i%3] != "DELETE" && !e.Deactivated(t, ns, ns) {
			t.Errorf("manager %s not deactivated", ns)
		}
	}
	if len(deletes)+len(scales)+len(hooks) != managers {
		t.Errorf("actions on %d targets, want %d", len(deletes)+len(scales)+len(hooks), managers)
	}
	// No sweep dies here and no answer is lost: a webhook delivered twice,
	// even under one key, is a duplicate.
	nsmantest.Figures{Runs: sweeps, Actions: applied.actions(), Duplicates: applied.duplicates(false), Began: began}.Log(t)
}

// TestConcurrentSweepsSleepAndWakeOnce starts four sweeps together over 20
// SLEEP managers and a SLEEP rule over 8 namespaces (eight sweeps over 200
// and 50 under NSMAN_LONG=1), each namespace with a workload of each way
// (see makeSleepers), their windows open now: each target is put to sleep by
// one sweep, each workload patched once, with its record. Then the windows
// move away from now and four sweeps start together again: each target
// wakes once, each workload restored once. Beside them, 4 managers and a
// rule over 4 namespaces (20 and 20 under NSMAN_LONG=1) whose warnings
// are due (see seedWarned): the first sweeps tell each once, and record
// it; the second tell none again.
func TestConcurrentSweepsSleepAndWakeOnce(t *testing.T) {
	managers, ruled, sweeps := nsmantest.Scale(20, 200), nsmantest.Scale(8, 50), nsmantest.Scale(4, 8)
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	ctx := t.Context()
	label, run := "nsman.test/concurrent-sleep", fmt.Sprint(managers)
	ensureRuleHome(t)

	namespaces := make([]string, managers+ruled)
	inParallel(t, len(namespaces), func(i int) error {
		ns, err := shared.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "concurrent-sleep-", Labels: map[string]string{label: run}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		namespaces[i] = ns.Name
		return makeSleepers(ctx, e, ns.Name)
	})
	// The first namespaces have a manager each; the rule's are the rest,
	// which it selects by label.
	manager := func(ns, name string, policy map[string]any, selected bool) *unstructured.Unstructured {
		spec := map[string]any{"policies": []any{policy}}
		if selected {
			spec["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{"nsman.test/rule": "sleep-" + run}}
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{label: run}},
			"spec":       spec,
		}}
	}
	inParallel(t, len(namespaces), func(i int) error {
		ns := namespaces[i]
		if i >= managers {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"nsman.test/rule":"sleep-%s"}}}`, run)
			_, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
		_, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(ctx, manager(ns, ns, sleepPolicy(-time.Hour, 2*time.Hour), false), metav1.CreateOptions{})
		return err
	})
	ruleName := "concurrent-sleep-" + run
	created, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ruleHome).Create(ctx, manager(ruleHome, ruleName, sleepPolicy(-time.Hour, 2*time.Hour), true), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rule := created.GetUID()
	warned := seedWarned(t, e, map[string]any{label: run}, nsmantest.Scale(4, 20), nsmantest.Scale(4, 20), "concurrent-warn-"+run)
	notices := nsmantest.NewReceiver(t)
	var told map[string]int
	// progress is the record of the SLEEP acting on the i-th namespace.
	progress := func(i int) status.Progress {
		if i < managers {
			return managerProgress(t, e, namespaces[i])
		}
		st, err := pairProgress(t, namespaces[i], rule)
		if err != nil {
			t.Fatalf("record of rule %s on %s: %v", ruleName, namespaces[i], err)
		}
		return st
	}

	applied, duplicates := 0, 0
	for _, phase := range []struct {
		name string
		wake bool
	}{{"sleep", false}, {"wake", true}} {
		if phase.wake {
			patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, write.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
			for i, ns := range append(namespaces[:managers:managers], ruleHome) {
				name := ns
				if i == managers {
					name = ruleName
				}
				if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		before, err := shared.AuditedRequests(ctx, e.User)
		if err != nil {
			t.Fatal(err)
		}
		reports := raceSweeps(t, e, bin, label+"="+run, sweeps, "--notify-url="+notices.URL+"/notify")
		after, err := shared.AuditedRequests(ctx, e.User)
		if err != nil {
			t.Fatal(err)
		}
		// No sweep dies: each warning is told once, by the first sweeps.
		var dups int
		told, dups = warned.check(t, e, notices, true, told)
		duplicates += dups

		// Each target is fired by one sweep, in the phase's direction.
		fired := map[string]int{}
		for _, r := range reports {
			for _, entry := range r.Entries {
				if entry.State == report.StateFired {
					fired[entry.Target]++
					if entry.Action != policy.ActionSleep || entry.Woke != phase.wake {
						t.Errorf("%s: %s/%s on %s fired %s (woke %t)", phase.name, entry.Namespace, entry.Name, entry.Target, entry.Action, entry.Woke)
					}
				}
			}
		}
		// Every workload patch of the phase is its sleep, or its restore
		// (see tally).
		counted := countActions(t, after[len(before):], nil)
		for i, ns := range namespaces {
			st := progress(i)
			want := asleepLine
			if phase.wake {
				want = awakeLine
			}
			if got := sleepersLine(t, e, ns); got != want {
				t.Errorf("%s: workloads in %s: %s, want %s", phase.name, ns, got, want)
			}
			if !settled(st) || (st.Asleep == nil) == !phase.wake {
				t.Errorf("%s: record of %s: %+v, asleep %+v", phase.name, ns, st, st.Asleep)
			}
			if got := counted.sleepPatches(ns); fired[ns] != 1 || got != patchedOnce {
				t.Errorf("%s: %s fired by %d sweeps, its workloads patched: %s; want once each", phase.name, ns, fired[ns], got)
			}
		}
		if n := counted.actions(); n != 4*len(namespaces) {
			t.Errorf("%s: %d workload patches, want one for each of the 4 workloads of %d namespaces", phase.name, n, len(namespaces))
		}
		applied += counted.actions()
		duplicates += counted.duplicates(false)
	}
	for i, ns := range namespaces[:managers] {
		if e.Deactivated(t, ns, ns) {
			t.Errorf("SLEEP manager %d (%s) deactivated", i, ns)
		}
	}
	if e.Deactivated(t, ruleHome, ruleName) {
		t.Errorf("SLEEP rule %s deactivated", ruleName)
	}
	nsmantest.Figures{Runs: 2 * sweeps, Actions: applied, Duplicates: duplicates, Began: began}.Log(t)
}

// raceSweeps runs n sweeps of the managers that selector selects at once,
// with args, each through a proxy of its own that times its requests,
// checks that they overlapped, and returns their reports.
func raceSweeps(t *testing.T, e *nsmantest.Env, bin, selector string, n int, args ...string) []report.Report {
	t.Helper()
	spans := nsmantest.NewSpans()
	reports := make([]report.Report, n)
	var wg sync.WaitGroup
	for i := range n {
		kubeconfig := spans.Kubeconfig(t, e, fmt.Sprint(i))
		wg.Go(func() {
			cmd := exec.Command(bin, append([]string{"sweep", "-o", "json", "--kubeconfig", kubeconfig, "-l", selector, "--log-level", "warn"}, args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("sweep %d: %v\n%s", i, err, stderr.String())
				return
			}
			if err := json.Unmarshal(stdout.Bytes(), &reports[i]); err != nil {
				t.Errorf("sweep %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	spans.Check(t)
	for i, r := range reports {
		t.Logf("sweep %d: %v", i, r.Summary.States)
	}
	return reports
}

// inParallel runs f(i) for each i below n, sixteen at a time, and fails the
// test on the first error.
func inParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
