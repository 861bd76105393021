package robust

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// killingProxy passes nsman's requests to the API server and, at the Nth,
// lets the request through, kills nsman before it can read the answer, and
// drops the connection: a sweep dying at that point of its request sequence.
type killingProxy struct {
	proxy  *httputil.ReverseProxy
	killAt int64
	seen   atomic.Int64
	// victim is the process to kill, known once started is closed.
	victim  *os.Process
	started chan struct{}
}

func newKillingProxy(killAt int64) *killingProxy {
	return &killingProxy{killAt: killAt, started: make(chan struct{})}
}

// watch makes the process cmd started the proxy's victim.
func (p *killingProxy) watch(cmd *exec.Cmd) {
	p.victim = cmd.Process
	close(p.started)
}

func (p *killingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.seen.Add(1)
	switch {
	case n < p.killAt:
		p.proxy.ServeHTTP(w, r)
		return
	case n == p.killAt:
		p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		// The request may come before the test learnt the process.
		select {
		case <-p.started:
			_ = p.victim.Kill()
		case <-time.After(10 * time.Second):
		}
	}
	panic(http.ErrAbortHandler)
}

// killed reports whether the process that ended with state was killed by
// SIGKILL: the proxy's kill, as the operating system tells it.
func killed(state *os.ProcessState) bool {
	status, ok := state.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == syscall.SIGKILL
}

// TestKilledSweepsConverge kills a sweep at each of its first 20 requests;
// after the claims of the dead sweeps expire, one clean sweep completes
// every due action, touches nothing that is not due, and any webhook sent
// twice carries the same Idempotency-Key. Under NSMAN_LONG=1, 100 sweeps of
// 32 managers each are killed at points spread over a whole sweep's
// requests, counted first by a sweep that is let through.
func TestKilledSweepsConverge(t *testing.T) {
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()

	points, perMix := nsmantest.Scale(20, 100), nsmantest.Scale(4, 32)
	mixes := make([]mix, points)
	for i := range mixes {
		mixes[i] = seedMix(t, e, recv, fmt.Sprintf("kill-%d", i+1), perMix)
	}
	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	start := func(m mix, p *killingProxy) (*exec.Cmd, *bytes.Buffer) {
		kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler { p.proxy = rp; return p })
		cmd := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+m.run, "--claim-ttl", "10s", "--concurrency", "1", "--log-level", "error", "-o", "json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.watch(cmd)
		runs++
		return cmd, &stderr
	}

	// Short: the first requests, one after the other. Long: a sweep over a
	// mix of the same size, let through, counts the requests of a whole
	// sweep, and the kill points are spread evenly over them.
	killAt := func(i int) int64 { return int64(i + 1) }
	var reference mix
	if nsmantest.Long() {
		reference = seedMix(t, e, recv, "kill-reference", perMix)
		p := newKillingProxy(math.MaxInt64)
		cmd, stderr := start(reference, p)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("reference sweep: %v\n%s", err, stderr)
		}
		n := p.seen.Load()
		t.Logf("a whole sweep over %d managers makes %d requests", perMix, n)
		killAt = func(i int) int64 { return 1 + int64(i)*(n-1)/int64(points) }
	}

	// All the killed sweeps at once, each through its own proxy. They act
	// on managers of their own: they run side by side to save time, not to
	// race.
	var wg sync.WaitGroup
	proxies := make([]*killingProxy, points)
	dead := make([]bool, points)
	for i, m := range mixes {
		p := newKillingProxy(killAt(i))
		proxies[i] = p
		cmd, stderr := start(m, p)
		wg.Go(func() {
			err := cmd.Wait()
			dead[i] = killed(cmd.ProcessState)
			reached := p.seen.Load() >= p.killAt
			switch {
			case err != nil && !reached:
				t.Logf("sweep %d ended before its kill point: %v\n%s", p.killAt, err, stderr.String())
			case reached && !dead[i]:
				t.Logf("sweep %d reached its kill point but was not killed: %v\n%s", p.killAt, err, stderr.String())
			}
		})
	}
	wg.Wait()
	// A kill counts when the operating system says the sweep died of it.
	kills, reached := 0, 0
	for i, p := range proxies {
		if dead[i] {
			kills++
		}
		if p.seen.Load() >= p.killAt {
			reached++
		}
	}
	// A sweep over four managers makes about twenty requests: nearly every
	// point must have been reached, and its sweep killed there.
	if kills < points-max(3, points/10) {
		t.Fatalf("only %d of %d sweeps were killed (%d reached their kill point): the kill points miss the request sequence, or the kills failed", kills, points, reached)
	}
	t.Logf("%d of %d sweeps killed mid-way", kills, points)

	// Every claim a dead sweep left has expired after 10s.
	time.Sleep(11 * time.Second)
	for i, m := range mixes {
		t.Run(fmt.Sprintf("killed at request %d", proxies[i].killAt), func(t *testing.T) {
			res := e.Sweep(t, "-l", "nsman.test/crash="+m.run)
			runs++
			if res.Code != 0 {
				t.Fatalf("clean sweep: exit %d\n%s", res.Code, res.Stderr)
			}
			m.checkConverged(t, e, recv, res)
		})
	}
	if nsmantest.Long() {
		res := e.Sweep(t, "-l", "nsman.test/crash="+reference.run)
		runs++
		reference.checkConverged(t, e, recv, res)
	}
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	// A webhook whose sweep was killed is re-sent under the same key, as it
	// must be; any other repeat is a duplicate.
	applied := countActions(t, after[len(before):], recv.Deliveries())
	nsmantest.Figures{Runs: runs, Faults: kills, Actions: applied.actions(), Duplicates: applied.duplicates(true), Began: began}.Log(t)
}

func createDeployment(t *testing.T, ns string, replicas int32) {
	t.Helper()
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), nsmantest.Deployment("web", replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createManager(t *testing.T, e *nsmantest.Env, ns, run string, ttl int64, action map[string]any) {
	t.Helper()
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": ns, "labels": map[string]any{"nsman.test/crash": run}},
		"spec": map[string]any{"policies": []any{map[string]any{
			"name":      "act when due",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": ttl}},
			"action":    action,
		}}},
	}}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
