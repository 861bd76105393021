package robust

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httputil"
	"os/exec"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestKilledStagedSweepsConverge kills sweeps of three-stage managers
// (warn by webhook, park by scale-down, both stages, then a final webhook):
// manager i is first swept cleanly i%3 times, so that the killed sweep acts
// on its first, second or third stage, and killed at its request i/3+1 (a
// sweep of one manager makes about eight). Once the dead sweeps' claims
// expire, clean sweeps play each manager through: every stage fires, each
// webhook under one Idempotency-Key (re-sent only under the same key), the
// Deployment scaled once, the manager deactivated.
func TestKilledStagedSweepsConverge(t *testing.T) {
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()
	points := nsmantest.Scale(24, 60)
	type run struct {
		ns, label string
		proxy     *killingProxy
	}
	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	runs := make([]run, points)
	for i := range runs {
		ns := shared.Namespace(t)
		createDeployment(t, ns, 2)
		label := fmt.Sprintf("stages-%d", i+1)
		// The manager is a tenant's: its receiver is a Service of ns.
		sink := recv.ServiceURL(t, shared.Admin, ns, "sink")
		webhook := func(path string) map[string]any {
			return map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": sink + "/" + ns + path}}
		}
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ns, "name": ns, "labels": map[string]any{"nsman.test/crash": label}},
			"spec": map[string]any{"policies": []any{
				map[string]any{"name": "warn", "final": false, "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}}, "action": webhook("/warn")},
				map[string]any{"name": "park", "final": false, "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}}, "action": map[string]any{"type": "SCALE_DOWN"}},
				map[string]any{"name": "report", "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}}, "action": webhook("/report")},
			}},
		}}
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(ctx, m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		runs[i] = run{ns: ns, label: label, proxy: newKillingProxy(int64(i/3 + 1))}
		for range i % 3 {
			if res := e.Sweep(t, "-l", "nsman.test/crash="+label); res.Code != 0 {
				t.Fatalf("sweep before the kill: exit %d\n%s", res.Code, res.Stderr)
			}
		}
	}
	// Side by side to save time: each sweep acts on a manager of its own.
	var wg sync.WaitGroup
	dead := make([]bool, len(runs))
	for i, r := range runs {
		kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler { r.proxy.proxy = rp; return r.proxy })
		cmd := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+r.label, "--claim-ttl", "10s", "--log-level", "error", "-o", "json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.proxy.watch(cmd)
		wg.Go(func() {
			_ = cmd.Wait()
			dead[i] = killed(cmd.ProcessState)
		})
	}
	wg.Wait()
	// A kill counts when the operating system says the sweep died of it.
	kills, reached := 0, 0
	for i, r := range runs {
		if dead[i] {
			kills++
		}
		if r.proxy.seen.Load() >= r.proxy.killAt {
			reached++
		}
	}
	if kills < points*3/4 {
		t.Fatalf("only %d of %d sweeps were killed (%d reached their kill point): the kill points miss the request sequence, or the kills failed", kills, points, reached)
	}
	t.Logf("%d of %d sweeps killed mid-way", kills, points)
	time.Sleep(11 * time.Second) // the dead sweeps' claims expire
	sweeps := len(runs) * 2
	for _, r := range runs {
		t.Run(fmt.Sprintf("killed at request %d", r.proxy.killAt), func(t *testing.T) {
			for range 3 {
				if res := e.Sweep(t, "-l", "nsman.test/crash="+r.label); res.Code != 0 {
					t.Fatalf("clean sweep: exit %d\n%s", res.Code, res.Stderr)
				}
				sweeps++
			}
			if !e.Deactivated(t, r.ns, r.ns) {
				raw, _ := json.Marshal(e.Manager(t, r.ns, r.ns).Object["status"])
				t.Errorf("not played through: status %s", raw)
			}
			d, err := shared.Admin.AppsV1().Deployments(r.ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != 0 {
				t.Errorf("replicas %d: the park stage did not run", *d.Spec.Replicas)
			}
		})
	}
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	applied := countActions(t, after[len(before):], recv.Deliveries())
	// A duplicate is a second scale-down, or a second Idempotency-Key for
	// one stage's webhook (its URL path); a re-send under the same key
	// after a killed sweep is what the specification asks for.
	keys := map[string]map[string]bool{}
	for _, d := range recv.Deliveries() {
		if keys[d.Path] == nil {
			keys[d.Path] = map[string]bool{}
		}
		keys[d.Path][d.Header.Get("Idempotency-Key")] = true
	}
	dups := 0
	for _, r := range runs {
		dups += max(applied.scales[r.ns]-1, 0)
		for _, path := range []string{"/" + r.ns + "/warn", "/" + r.ns + "/report"} {
			if len(keys[path]) != 1 {
				t.Errorf("%s: %d Idempotency-Keys, want 1", path, len(keys[path]))
			}
			dups += max(len(keys[path])-1, 0)
		}
		if applied.scales[r.ns] != 1 {
			t.Errorf("%s: scaled %d times, want once", r.ns, applied.scales[r.ns])
		}
	}
	nsmantest.Figures{Runs: sweeps, Faults: kills, Actions: applied.actions(), Duplicates: dups, Began: began}.Log(t)
}
