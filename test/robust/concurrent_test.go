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

	"github.com/nsman/nsman/internal/cluster"
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
	var wg sync.WaitGroup
	errs := make(chan error, managers)
	sem := make(chan struct{}, 16)
	// parallel runs f(i) for each manager i, sixteen at a time, and fails
	// the test on the first error.
	parallel := func(f func(i int) error) {
		t.Helper()
		for i := range managers {
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
	// Each sweep through a proxy of its own, which times its requests: the
	// sweeps must have overlapped. They start as the processes do, not held
	// to start together, so that some list the managers while others are
	// already acting on them.
	spans := nsmantest.NewSpans()
	reports := make([]report.Report, sweeps)
	for i := range sweeps {
		kubeconfig := spans.Kubeconfig(t, e, fmt.Sprint(i))
		wg.Go(func() {
			cmd := exec.Command(bin, "sweep", "-o", "json", "--kubeconfig", kubeconfig, "-l", label+"="+run, "--log-level", "warn")
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
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}

	fired := 0
	for i, r := range reports {
		fired += r.Summary.States[report.StateFired]
		t.Logf("sweep %d: %v", i, r.Summary.States)
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
