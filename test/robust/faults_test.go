package robust

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// faultyProxy passes requests to the API server and spoils about one in ten:
// a 500, a 429 asking to retry after a second, a connection reset before
// the request reaches the server, one after it did (the write happened, the
// answer is lost), or a two-second delay.
type faultyProxy struct {
	proxy *httputil.ReverseProxy

	mu     sync.Mutex
	rand   *rand.Rand
	faults map[string]int
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault := ""
	if p.rand.IntN(10) == 0 {
		fault = []string{"500", "429", "reset", "reset after", "slow"}[p.rand.IntN(5)]
		p.faults[fault]++
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

// TestSweepUnderAPIFaults runs a sweep of 30 due managers through an API
// server connection that fails about one request in ten: it ends within its
// deadline, and one clean sweep after it converges with nothing lost and
// nothing done twice.
func TestSweepUnderAPIFaults(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()
	const run = "faults"
	m := seedMix(t, e, recv, run, 40)
	proxy := &faultyProxy{rand: rand.New(rand.NewPCG(1, 2)), faults: map[string]int{}}
	kubeconfig := kubeconfigThrough(t, e, func(rp *httputil.ReverseProxy) http.Handler { proxy.proxy = rp; return proxy })

	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, err := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+run, "--claim-ttl", "20s", "--log-level", "error", "-o", "json").Output()
	took := time.Since(began)
	var report sweep.Report
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		// The sweep may not even start when its first requests fail; that
		// is an exit 2 with a clear message, and the clean sweep catches up.
		t.Logf("faulty sweep printed no report (%v): %v", err, jerr)
	} else {
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
		if (code == 1) != report.Failed() || code > 1 {
			t.Errorf("faulty sweep: exit %d with %d failed", code, report.Summary.States[sweep.StateFailed])
		}
		t.Logf("faulty sweep: %v in %s, exit %d", report.Summary.States, took.Round(time.Millisecond), code)
	}
	proxy.mu.Lock()
	t.Logf("faults injected: %v", proxy.faults)
	proxy.mu.Unlock()
	if took > time.Minute {
		t.Errorf("the faulty sweep took %s", took)
	}

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
	deletes, scales := map[string]int{}, map[string]int{}
	for _, r := range after[len(before):] {
		switch {
		case r.Verb == "delete" && r.Resource == "namespaces" && r.Code == 200:
			deletes[r.Name]++
		case r.Verb == "patch" && r.Resource == "deployments" && r.Code == 200:
			scales[r.Namespace]++
		}
	}
	for ns, action := range m.due {
		switch {
		case action == "DELETE" && deletes[ns] != 1:
			t.Errorf("namespace %s deleted %d times", ns, deletes[ns])
		case action == "SCALE_DOWN" && scales[ns] != 1:
			t.Errorf("deployment in %s scaled %d times", ns, scales[ns])
		}
	}
	m.checkConverged(t, e, recv, res)
}
