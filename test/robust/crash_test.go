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
	"slices"
	"strings"
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
//
// Beside them, sweeps of mixes of SLEEP alone (see seedSleepMix; one of
// their rules sleeps with every parameter: replicas, loadBalancers,
// patches) are killed at each request of a whole sweep, counted first by a sweep that
// is let through, and one clean sweep over them all puts every workload to
// sleep with its record. Then their windows move away from now, sweeps are
// killed again at each request of the sweep that wakes them, and one clean
// sweep wakes every workload. Each workload, Service and HelmRelease is
// put to sleep once, and restored once. The SLEEP mixes' warnings (see
// seedWarned) are told at most once each (a sweep killed between the
// record and the notification loses it), the record says so once a sweep
// completed, and no later sweep, killed or not, tells them again.
func TestKilledSweepsConverge(t *testing.T) {
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	// notices gets the sweeps' notifications: the SLEEP mixes' warnings.
	notices := nsmantest.NewReceiver(t)
	notify := "--notify-url=" + notices.URL + "/notify"
	ctx := t.Context()

	points, perMix := nsmantest.Scale(20, 100), nsmantest.Scale(4, 32)
	var sleepMixes []mix
	var sleepRuns []string
	runs := 0
	start := func(m mix, p *killingProxy) (*exec.Cmd, *bytes.Buffer) {
		kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler { p.proxy = rp; return p })
		cmd := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+m.run, "--claim-ttl", "20s", "--concurrency", "1", "--log-level", "error", "-o", "json", notify)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.watch(cmd)
		runs++
		return cmd, &stderr
	}
	// count sweeps mix m let through and returns the number of requests
	// of that whole sweep.
	count := func(m mix, what string) int64 {
		p := newKillingProxy(math.MaxInt64)
		cmd, stderr := start(m, p)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("reference sweep: %v\n%s", err, stderr)
		}
		n := p.seen.Load()
		t.Logf("a whole sweep of mix %s that %s makes %d requests", m.run, what, n)
		return n
	}

	// killAll starts, all at once, a sweep of each of ms through a proxy
	// of its own that kills the i-th at killAt(i), waits for them, and
	// returns the kill points, the number of sweeps killed, and when every
	// claim a dead sweep left has expired. They act on managers of their
	// own: they run side by side to save time, not to race.
	killAll := func(ms []mix, killAt func(i int) int64) ([]int64, int, time.Time) {
		var wg sync.WaitGroup
		proxies := make([]*killingProxy, len(ms))
		dead := make([]bool, len(ms))
		for i, m := range ms {
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
		// Claims last 20s from the last kill: 15s for an action, which
		// two dozen sweeps started at once on a loaded machine need.
		expired := time.Now().Add(21 * time.Second)
		// A kill counts when the operating system says the sweep died of it.
		at := make([]int64, len(ms))
		kills, reached := 0, 0
		for i, p := range proxies {
			at[i] = p.killAt
			if dead[i] {
				kills++
			}
			if p.seen.Load() >= p.killAt {
				reached++
			}
		}
		// Every kill point lies within a whole sweep's requests: nearly
		// every point must have been reached, and its sweep killed there.
		if kills < len(ms)-max(3, len(ms)/10) {
			t.Fatalf("only %d of %d sweeps were killed (%d reached their kill point): the kill points miss the request sequence, or the kills failed", kills, len(ms), reached)
		}
		t.Logf("%d of %d sweeps killed mid-way", kills, len(ms))
		return at, kills, expired
	}
	// sweepSleepMixes sweeps every SLEEP mix cleanly, in one sweep, and
	// checks each, killed at at, with check.
	sweepSleepMixes := func(phase string, at []int64, check func(*testing.T, int, mix, nsmantest.Result)) {
		res := e.Sweep(t, "-l", "nsman.test/crash in ("+strings.Join(sleepRuns, ",")+")", notify)
		runs++
		if res.Code != 0 {
			t.Fatalf("clean sweep of the SLEEP mixes %s: exit %d\n%s", phase, res.Code, res.Stderr)
		}
		for i, m := range sleepMixes {
			t.Run(fmt.Sprintf("%s SLEEP killed at request %d", phase, at[i]), func(t *testing.T) { check(t, i, m, res) })
		}
	}

	// The SLEEP mixes first, as many as a whole sweep of one makes
	// requests, each killed at one: their claims expire while the mixes
	// are seeded.
	sleepReference := seedSleepMix(t, e, "kill-sleep-reference")
	sleepPoints := int(count(sleepReference, "puts to sleep"))
	for i := range sleepPoints {
		m := seedSleepMix(t, e, fmt.Sprintf("kill-sleep-%d", i+1))
		sleepMixes, sleepRuns = append(sleepMixes, m), append(sleepRuns, m.run)
	}
	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	sleepAt, sleepKills, sleepExpired := killAll(sleepMixes, func(i int) int64 { return int64(i + 1) })

	mixes := make([]mix, points)
	for i := range mixes {
		mixes[i] = seedMix(t, e, recv, fmt.Sprintf("kill-%d", i+1), perMix)
	}
	// Short: the first requests, one after the other. Long: a sweep over a
	// mix of the same size, let through, counts the requests of a whole
	// sweep, and the kill points are spread evenly over them.
	killAt := func(i int) int64 { return int64(i + 1) }
	var reference mix
	if nsmantest.Long() {
		reference = seedMix(t, e, recv, "kill-reference", perMix)
		n := count(reference, "acts")
		killAt = func(i int) int64 { return 1 + int64(i)*(n-1)/int64(points) }
	}
	mixAt, kills, mixesExpired := killAll(mixes, killAt)

	time.Sleep(time.Until(sleepExpired))
	// Each subject warned is told at most once, its record says so once
	// a sweep completed, and no later sweep tells it again.
	told := make([]map[string]int, len(sleepMixes))
	warnDups := 0
	sweepSleepMixes("asleep", sleepAt, func(t *testing.T, i int, m mix, res nsmantest.Result) {
		m.checkConverged(t, e, recv, res)
		told[i], _ = m.warned.check(t, e, notices, false, nil)
	})
	// A sweep killed between a subject's record and its notification
	// loses its warning: a kill point or two of each subject's; every
	// other subject is told.
	untold, subjects := 0, 0
	for i, m := range sleepMixes {
		subjects += len(m.warned)
		for ns := range m.warned {
			if told[i][ns] == 0 {
				untold++
			}
		}
	}
	t.Logf("warnings: %d of %d subjects not told", untold, subjects)
	if untold > 2*len(sleepReference.warned) {
		t.Errorf("%d of %d subjects warned were not told: more than the sweeps killed between a record and its notification", untold, subjects)
	}
	asleep, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	// The wake: killed at each request of the sweep that wakes a SLEEP
	// mix, or spread over them if there are more requests than mixes.
	for _, m := range append(slices.Clone(sleepMixes), sleepReference) {
		m.wakeUp(t, e)
	}
	n := count(sleepReference, "wakes")
	wakeAt := func(i int) int64 { return 1 + int64(i)%n }
	if n > int64(sleepPoints) {
		wakeAt = func(i int) int64 { return 1 + int64(i)*(n-1)/int64(sleepPoints) }
	}
	sleepAt, wakeKills, wakeExpired := killAll(sleepMixes, wakeAt)

	time.Sleep(time.Until(mixesExpired))
	for i, m := range mixes {
		t.Run(fmt.Sprintf("killed at request %d", mixAt[i]), func(t *testing.T) {
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
	time.Sleep(time.Until(wakeExpired))
	sweepSleepMixes("awake", sleepAt, func(t *testing.T, i int, m mix, res nsmantest.Result) {
		m.checkAwake(t, e, res)
		_, dups := m.warned.check(t, e, notices, false, told[i])
		warnDups += dups
	})
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}

	// A webhook whose sweep was killed is re-sent under the same key, as it
	// must be; any other repeat is a duplicate. The workloads of the SLEEP
	// mixes are counted in each phase on its own (see tally): before the
	// wake, every patch puts one to sleep; after, every one is a restore.
	applied := countActions(t, after[len(before):], recv.Deliveries())
	slept := countActions(t, asleep[len(before):], nil)
	woke := countActions(t, after[len(asleep):], nil)
	dups := 0
	for _, m := range sleepMixes {
		for _, ns := range m.sleeping() {
			if got := slept.sleepPatches(ns) + "; " + woke.sleepPatches(ns); got != patchedOnce+"; "+patchedOnce {
				t.Errorf("workloads in %s patched to put them to sleep, then in the wake: %s; want once each", ns, got)
			}
			dups += slept.extraPatches(ns) + woke.extraPatches(ns)
			applied.forget(ns)
		}
		for _, ns := range m.params {
			if got := slept.paramsPatches(ns) + "; " + woke.paramsPatches(ns); got != paramsPatchedOnce+"; "+paramsPatchedOnce {
				t.Errorf("what the sleep with every parameter changes in %s, patched to put it to sleep, then in the wake: %s; want once each", ns, got)
			}
			dups += max(slept.services[ns]-1, 0) + max(slept.releases[ns]-1, 0) + max(woke.services[ns]-1, 0) + max(woke.releases[ns]-1, 0) + max(slept.scales[ns]-1, 0) + max(woke.scales[ns]-1, 0)
			applied.forget(ns)
		}
	}
	for _, m := range mixes {
		for _, ns := range m.sleeping() {
			if got := applied.sleepPatches(ns); got != patchedOnce {
				t.Errorf("workloads in %s patched: %s; want once each", ns, got)
			}
		}
	}
	nsmantest.Figures{Runs: runs, Faults: sleepKills + kills + wakeKills, Actions: applied.actions() + slept.actions() + woke.actions(), Duplicates: applied.duplicates(true) + dups + warnDups, Began: began}.Log(t)
}

func createDeployment(t *testing.T, ns string, replicas int32) {
	t.Helper()
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), nsmantest.Deployment("web", replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createManager(t *testing.T, e *nsmantest.Env, ns, run string, ttl int64, action map[string]any) {
	t.Helper()
	createManagerWith(t, e, ns, run, map[string]any{
		"name":      "act when due",
		"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": ttl}},
		"action":    action,
	})
}

// createManagerWith creates manager ns in ns, labelled run, of policy alone.
func createManagerWith(t *testing.T, e *nsmantest.Env, ns, run string, policy map[string]any) {
	t.Helper()
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": ns, "labels": map[string]any{"nsman.test/crash": run}},
		"spec":       map[string]any{"policies": []any{policy}},
	}}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
