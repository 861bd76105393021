package robust

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// faultyProxy passes requests to the API server and spoils about one in ten:
// a 500, a 429 asking to retry after a second, a connection reset before
// the request reaches the server, one after it did (the write happened, the
// answer is lost), or a two-second delay. The first fault comes by request
// firstBy at the latest, so that every sweep through the proxy meets one.
type faultyProxy struct {
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	rand     *rand.Rand
	firstBy  int
	requests int
	faults   map[string]int
	injected int
}

// newFaultyProxy returns a faultyProxy whose choices follow seed, and whose
// first fault comes by one of the first ten requests (the seed's choice).
func newFaultyProxy(seed uint64) *faultyProxy {
	r := rand.New(rand.NewPCG(1, seed))
	return &faultyProxy{rand: r, firstBy: 1 + r.IntN(10), faults: map[string]int{}}
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests++
	fault := ""
	if p.rand.IntN(10) == 0 || (p.injected == 0 && p.requests >= p.firstBy) {
		fault = []string{"500", "429", "reset", "reset after", "slow"}[p.rand.IntN(5)]
		p.faults[fault]++
		p.injected++
	}
	p.mu.Unlock()
	switch fault {
	case "500":
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`, http.StatusInternalServerError)
	case "429":
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
	case "reset":
		panic(http.ErrAbortHandler)
	case "reset after":
		p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler)
	case "slow":
		time.Sleep(2 * time.Second)
		p.proxy.ServeHTTP(w, r)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// TestSweepUnderAPIFaults runs a sweep of 40 managers (30 due) and 5 SLEEP
// managers through an API server connection that fails about one request in ten (at least one,
// as the proxy counts them): it ends within its deadline, and one clean
// sweep after it converges with nothing lost and nothing done twice. Under
// NSMAN_LONG=1 it does so in five rounds of 120 managers, each with faults
// of its own.
func TestSweepUnderAPIFaults(t *testing.T) {
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()
	rounds, managers := nsmantest.Scale(1, 5), nsmantest.Scale(40, 120)

	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	faults := 0
	for round := range rounds {
		run := "faults"
		if rounds > 1 {
			run = fmt.Sprintf("faults-%d", round+1)
			t.Logf("round %d of %d", round+1, rounds)
		}
		faults += faultyRound(t, e, bin, recv, run, uint64(2+round), managers)
	}
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	// A webhook whose answer was lost is re-sent under the same key, as it
	// must be; any other repeat is a duplicate.
	applied := countActions(t, after[len(before):], recv.Deliveries())
	nsmantest.Figures{Runs: 2 * rounds, Faults: faults, Actions: applied.actions(), Duplicates: applied.duplicates(true), Began: began}.Log(t)
}

// faultyRound seeds n managers labelled run, sweeps them through a faulty
// proxy seeded with seed, then cleanly once the claims have expired, checks
// that they converged with every delete, scale-down and sleep done once, and
// returns the number of faults injected.
func faultyRound(t *testing.T, e *nsmantest.Env, bin string, recv *nsmantest.Receiver, run string, seed uint64, n int) int {
	t.Helper()
	ctx := t.Context()
	m := seedMix(t, e, recv, run, n)
	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	faults := faultySweep(t, e, bin, run, seed)

	// Claims left by writes whose answers were lost expire after 20s.
	time.Sleep(21 * time.Second)
	res := e.Sweep(t, "-l", "nsman.test/crash="+run)
	if res.Code != 0 {
		t.Fatalf("clean sweep: exit %d\n%s", res.Code, res.Stderr)
	}
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	applied := countActions(t, after[len(before):], nil)
	deletes, scales, suspends := applied.deletes, applied.scales, applied.suspends
	due := maps.Clone(m.due)
	for ns, v := range m.ruled {
		due[ns], _ = ruledAction(v)
	}
	for _, ns := range m.sleepers {
		due[ns] = "SLEEP"
	}
	for ns, action := range due {
		switch {
		case action == "DELETE" && deletes[ns] != 1:
			t.Errorf("namespace %s deleted %d times", ns, deletes[ns])
		case action == "SCALE_DOWN" && scales[ns] != 1:
			t.Errorf("deployment in %s scaled %d times", ns, scales[ns])
		case action == "SLEEP" && (scales[ns] != 1 || suspends[ns] != 1):
			t.Errorf("workloads in %s put to sleep: deployment %d times, cronjob %d times", ns, scales[ns], suspends[ns])
		}
	}
	m.checkConverged(t, e, recv, res)
	return faults
}

// faultySweep sweeps the managers labelled run once through a faultyProxy
// seeded with seed, with claims of 20s, checks that it ended within a
// minute with an exit code that agrees with its report and that the proxy
// injected at least one fault, and returns the number of faults injected.
func faultySweep(t *testing.T, e *nsmantest.Env, bin, run string, seed uint64) int {
	t.Helper()
	proxy := newFaultyProxy(seed)
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler { proxy.proxy = rp; return proxy })
	began := time.Now()
	out, err := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+run, "--claim-ttl", "20s", "--log-level", "error", "-o", "json").Output()
	took := time.Since(began)
	var rep report.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		// The sweep may not even start when its first requests fail; that
		// is an exit 2 with a clear message, and the clean sweep catches up.
		t.Logf("faulty sweep printed no report (%v): %v", err, jerr)
	} else {
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
		if (code == 1) != rep.Failed() || code > 1 {
			t.Errorf("faulty sweep: exit %d with %d failed", code, rep.Summary.States[report.StateFailed])
		}
		t.Logf("faulty sweep: %v in %s, exit %d", rep.Summary.States, took.Round(time.Millisecond), code)
	}
	if took > time.Minute {
		t.Errorf("the faulty sweep took %s", took)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	t.Logf("faults injected: %v in %d requests", proxy.faults, proxy.requests)
	if proxy.injected == 0 {
		t.Errorf("the proxy injected no fault in %d requests: the sweep ran as on a clean connection", proxy.requests)
	}
	return proxy.injected
}
