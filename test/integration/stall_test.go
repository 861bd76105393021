package integration

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// A receiver that never answers stalls nothing: dozens of managers call
// it, beside due DELETEs and a due rule. The first sweep carries out every
// other action, tries the silent receiver only with the deliveries under
// way when it first timed out, defers the rest, and ends within about
// twice one delivery's worst case; the next sweep makes no connection to
// it (each manager backs off) and ends within seconds.
func TestSilentReceiverStallsNothing(t *testing.T) {
	e := setup(t)
	const (
		silentManagers = 40
		concurrency    = 4
		attempts       = 3
		timeout        = time.Second
		// One delivery's worst case: every attempt times out, with the
		// backoff of 1 s and 2 s between them.
		worstDelivery = attempts*timeout + 3*time.Second
	)
	home := shared.Namespace(t)
	caseID := home
	silent := nsmantest.NewReceiver(t)
	silent.SetHold(time.Hour)
	t.Cleanup(silent.Release)
	url := silent.ServiceURL(t, shared.Admin, home, "sink")
	for i := range silentManagers {
		createManager(t, managerObj(home, fmt.Sprintf("silent-%02d", i), caseID, []any{ttlPolicy("report at once", 0, webhookAction(url+"/hook"))}, targeting(home)))
	}
	var deleted []string
	for range 5 {
		ns := shared.Namespace(t)
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
		deleted = append(deleted, ns)
	}
	ruleHome := shared.Namespace(t)
	ruled := labelled(t, caseID, 3)
	fast := nsmantest.NewReceiver(t)
	createManager(t, managerObj(ruleHome, "leftovers", caseID, []any{ttlPolicy("report at once", 0, webhookAction(fast.URL+"/rule"))}, selecting(caseID)))
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", ruleHome, "--concurrency", fmt.Sprint(concurrency), "--webhook-timeout", timeout.String()}

	writesBefore := len(e.Writes(t))
	began := time.Now()
	res := e.Sweep(t, args...)
	took := time.Since(began)
	for _, ns := range deleted {
		wantState(t, res, ns, ns, report.StateFired)
	}
	for _, ns := range ruled {
		if p := res.Pair(t, ruleHome, "leftovers", ns); p.State != report.StateFired {
			t.Errorf("rule on %s: %q (%s), want fired", ns, p.State, p.Message)
		}
	}
	var refs []manager
	for i := range silentManagers {
		refs = append(refs, manager{home, fmt.Sprintf("silent-%02d", i)})
	}
	timedOut, deferrals := timedOutOrDeferred(t, res, "timed out", receiverSilent, refs)
	failed, deferred := len(timedOut), len(deferrals)
	for _, m := range refs {
		if got := res.Entry(t, m.namespace, m.name); got.Due == nil || got.Due.Before(res.Report.Summary.Now.Add(time.Minute-time.Second)) {
			t.Errorf("%s: due %v, want the next attempt a minute on", m.name, got.Due)
		}
	}
	first := silent.Arrivals()
	t.Logf("first sweep: %s; %d timed out, %d deferred; %d requests reached the silent receiver", took.Round(time.Millisecond), failed, deferred, first)
	if failed > concurrency || first > failed {
		t.Errorf("%d deliveries timed out with %d requests: want at most the %d under way when the first timed out, one attempt each", failed, first, concurrency)
	}
	if took > 2*worstDelivery {
		t.Errorf("the first sweep took %s, want at most twice one delivery's worst case (%s)", took, 2*worstDelivery)
	}
	// A delivery that timed out was claimed, then recorded; a deferred one
	// is recorded only: no claim, no place under --max-actions.
	records := 0
	for _, w := range e.Writes(t)[writesBefore:] {
		if w.Namespace == home && w.Resource == "namespacemanagers" {
			records++
		}
	}
	if records != 2*failed+deferred {
		t.Errorf("%d writes of the silent receiver's managers, want %d: a claim and a record each of the %d that timed out, a record each of the %d deferred", records, 2*failed+deferred, failed, deferred)
	}
	if failed == 0 || deferred == 0 {
		t.Fatalf("want at least one delivery timed out (%d) and one deferred (%d)", failed, deferred)
	}
	// Which managers timed out and were deferred depends on the workers' order.
	aFailed, aDeferred := timedOut[0].name, deferrals[0].name
	if st := managerStatus(t, home, aFailed); st.LastAction == nil || st.LastAction.NextAttempt == nil || st.LastAction.Failures != 1 || st.LastAction.Deferred {
		t.Errorf("%s: status %+v: want the failure and the next attempt recorded", aFailed, st.LastAction)
	}
	if st := managerStatus(t, home, aDeferred); st.LastAction == nil || st.LastAction.NextAttempt == nil || st.LastAction.Failures != 0 || !st.LastAction.Deferred {
		t.Errorf("%s: status %+v: want the deferral and the next attempt recorded, no failure counted", aDeferred, st.LastAction)
	}

	began = time.Now()
	res = e.Sweep(t, args...)
	took = time.Since(began)
	for i := range silentManagers {
		if got := res.Entry(t, home, fmt.Sprintf("silent-%02d", i)); got.State != report.StateDeferred || !strings.Contains(got.Message, "backs off") {
			t.Errorf("next sweep, silent-%02d: %q (%s), want deferred, backing off", i, got.State, got.Message)
		}
	}
	t.Logf("next sweep: %s; %d more requests", took.Round(time.Millisecond), silent.Arrivals()-first)
	if silent.Arrivals() != first {
		t.Errorf("the next sweep made %d requests to the silent receiver, want none", silent.Arrivals()-first)
	}
	if took > 5*time.Second {
		t.Errorf("the next sweep took %s, want seconds", took)
	}
}

// A tenant whose managers each name a receiver of their own that never
// answers (a Service apiece: port hopping past the per-receiver deferral)
// costs the sweep the timeouts of the deliveries under way when its second
// receiver timed out, each one attempt: the rest of its deliveries are
// deferred at once. Another tenant's webhook is delivered.
func TestPortHoppingTenantSpendsItsSilentReceivers(t *testing.T) {
	e := setup(t)
	const (
		hops        = 16
		concurrency = 4
		timeout     = time.Second
	)
	hopper, neighbour := shared.Namespace(t), shared.Namespace(t)
	caseID := hopper
	silent := nsmantest.NewReceiver(t)
	silent.SetHold(time.Hour)
	t.Cleanup(silent.Release)
	for i := range hops {
		url := silent.ServiceURL(t, shared.Admin, hopper, fmt.Sprintf("sink-%02d", i))
		createManager(t, managerObj(hopper, fmt.Sprintf("hop-%02d", i), caseID, []any{ttlPolicy("report at once", 0, webhookAction(url+"/hook"))}, targeting(hopper)))
	}
	fast := nsmantest.NewReceiver(t)
	createManager(t, managerObj(neighbour, neighbour, caseID, []any{ttlPolicy("report at once", 0, webhookAction(fast.ServiceURL(t, shared.Admin, neighbour, "sink")+"/hook"))}))

	began := time.Now()
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--concurrency", fmt.Sprint(concurrency), "--webhook-timeout", timeout.String())
	took := time.Since(began)
	wantState(t, res, neighbour, neighbour, report.StateFired)
	var refs []manager
	for i := range hops {
		refs = append(refs, manager{hopper, fmt.Sprintf("hop-%02d", i)})
	}
	// Timed out after one attempt, or deferred for the namespace.
	timedOut, deferrals := timedOutOrDeferred(t, res, "timed out", "2 receivers of this namespace did not answer", refs)
	failed, deferred := len(timedOut), len(deferrals)
	t.Logf("sweep: %s; %d timed out, %d deferred; %d requests reached the silent receivers", took.Round(time.Millisecond), failed, deferred, silent.Arrivals())
	if failed > concurrency || silent.Arrivals() > concurrency {
		t.Errorf("%d deliveries timed out with %d requests: want at most the %d under way, one attempt each", failed, silent.Arrivals(), concurrency)
	}
	// Without the namespace's budget: 16 receivers × 3 attempts (6 s) / 4
	// workers = 24 s.
	if took > 4*timeout+5*time.Second {
		t.Errorf("the sweep took %s, want about one attempt's timeout", took)
	}
}

// Managers of many tenants' namespaces whose WEBHOOK goes to one host that
// accepts connections and never answers cost a sweep one timeout for the
// deliveries under way when it first timed out, one attempt each: the host
// is silent for every namespace for the rest of the sweep, the other
// deliveries are deferred, and each backs off from the end of its attempt,
// so that the next sweep right after knocks on nobody. With the defaults
// (--webhook-timeout 10s, --concurrency 16).
func TestSilentHostOfManyNamespaces(t *testing.T) {
	e := setup(t)
	const (
		namespaces = 60
		// What the sweep may take (it took 132 s when each namespace
		// tried the host 3 times).
		bound = 75 * time.Second
		// The webhook workers: --concurrency's default.
		workers = 16
	)
	hold := holdingListener(t)
	caseID := shared.Namespace(t)
	var refs []manager
	for range namespaces {
		ns := shared.Namespace(t)
		createManager(t, managerObj(ns, "hook", caseID, []any{ttlPolicy("report at once", 0, webhookAction("http://"+hold.addr+"/hook"))}, targeting(ns)))
		refs = append(refs, manager{ns, "hook"})
	}
	args := []string{"-l", caseLabel + "=" + caseID, "--webhook-allow", "127.0.0.1"}

	began := time.Now()
	res := e.Sweep(t, args...)
	took := time.Since(began)
	timedOut, deferrals := timedOutOrDeferred(t, res, "timed out", receiverSilent, refs)
	first := hold.accepted.Load()
	t.Logf("first sweep: %s; %d timed out, %d deferred; %d connections accepted", took.Round(time.Millisecond), len(timedOut), len(deferrals), first)
	if took > bound {
		t.Errorf("the first sweep took %s, want at most %s", took, bound)
	}
	if len(timedOut) == 0 || len(timedOut) > workers || first > int64(len(timedOut)) {
		t.Errorf("%d deliveries timed out with %d connections: want at least one, at most the %d under way when the host first timed out, one attempt each", len(timedOut), first, workers)
	}
	for _, m := range refs {
		if got := res.Entry(t, m.namespace, m.name); got.Due == nil || got.Due.Before(res.Report.Summary.Now.Add(time.Minute)) {
			t.Errorf("%s: due %v, want the next attempt a minute after its attempt, or its deferral", m.namespace, got.Due)
		}
	}

	began = time.Now()
	res = e.Sweep(t, args...)
	took = time.Since(began)
	t.Logf("next sweep: %s; %d more connections", took.Round(time.Millisecond), hold.accepted.Load()-first)
	for _, m := range refs {
		if got := res.Entry(t, m.namespace, m.name); got.State != report.StateDeferred || !strings.Contains(got.Message, "backs off") {
			t.Errorf("next sweep, %s: %q (%s), want deferred, backing off", m.namespace, got.State, got.Message)
		}
	}
	if n := hold.accepted.Load() - first; n != 0 {
		t.Errorf("the next sweep made %d connections to the silent host, want none", n)
	}
}

// Managers of many tenants' namespaces whose WEBHOOKs each go to a host of
// their own that accepts connections and never answers cost a sweep what
// it waits on silent receivers for tenants, 2 × --webhook-timeout ×
// --concurrency of worker time (and the attempts under way then): fewer
// than 3 × --concurrency attempts, one each, about 3 timeouts of wall
// time; the other deliveries are deferred. With the defaults
// (--webhook-timeout 10s, --concurrency 16).
func TestSilentHostsOfManyNamespacesAreBounded(t *testing.T) {
	e := setup(t)
	const (
		namespaces = 60
		// What the sweep may take (it took 132 s when each namespace
		// tried its host 3 times).
		bound   = 75 * time.Second
		workers = 16
	)
	caseID := shared.Namespace(t)
	var (
		refs  []manager
		hosts []*holding
	)
	for range namespaces {
		ns := shared.Namespace(t)
		hold := holdingListener(t)
		hosts = append(hosts, hold)
		createManager(t, managerObj(ns, "hook", caseID, []any{ttlPolicy("report at once", 0, webhookAction("http://"+hold.addr+"/hook"))}, targeting(ns)))
		refs = append(refs, manager{ns, "hook"})
	}
	began := time.Now()
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--webhook-allow", "127.0.0.1")
	took := time.Since(began)
	timedOut, deferrals := timedOutOrDeferred(t, res, "timed out", "took what this sweep waits for tenants' webhooks", refs)
	var connections int64
	for _, h := range hosts {
		connections += h.accepted.Load()
	}
	t.Logf("sweep: %s; %d timed out, %d deferred; %d connections accepted", took.Round(time.Millisecond), len(timedOut), len(deferrals), connections)
	if took > bound {
		t.Errorf("the sweep took %s, want at most %s", took, bound)
	}
	if len(timedOut) >= 3*workers || connections != int64(len(timedOut)) {
		t.Errorf("%d deliveries timed out with %d connections: want fewer than %d, one attempt each", len(timedOut), connections, 3*workers)
	}
	if len(deferrals) == 0 {
		t.Error("no delivery deferred: want those past the sweep's time for silent receivers deferred")
	}
}

// holding is a TCP listener that accepts every connection, counts it, and
// never writes a byte.
type holding struct {
	addr     string
	accepted atomic.Int64
}

func holdingListener(t *testing.T) *holding {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &holding{addr: l.Addr().String()}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return h
}

// manager names a NamespaceManager.
type manager struct{ namespace, name string }

// receiverSilent is what a delivery deferred for its silent receiver says.
const receiverSilent = "did not answer an earlier request of this sweep"

// timedOutOrDeferred sorts the entries of managers into those that failed
// with a message beginning timedOut and those deferred with one holding
// deferral; any other entry is an error.
func timedOutOrDeferred(t *testing.T, res nsmantest.Result, timedOut, deferral string, managers []manager) (failed, deferred []manager) {
	t.Helper()
	for _, m := range managers {
		switch got := res.Entry(t, m.namespace, m.name); {
		case got.State == report.StateFailed && strings.HasPrefix(got.Message, timedOut):
			failed = append(failed, m)
		case got.State == report.StateDeferred && strings.Contains(got.Message, deferral):
			deferred = append(deferred, m)
		default:
			t.Errorf("%s/%s: %q (%s), want it failed (%s) or deferred (%s)", m.namespace, m.name, got.State, got.Message, timedOut, deferral)
		}
	}
	return failed, deferred
}
