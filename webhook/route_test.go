package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A tenant's webhook reaches public addresses only: every range that is not
// globally reachable is refused, however it is written.
func TestCheckPublic(t *testing.T) {
	for _, tt := range []struct {
		ip     string
		public bool
	}{
		{"10.96.0.10", false},
		{"172.20.3.4", false},
		{"192.168.1.1", false},
		{"127.0.0.1", false},
		{"127.77.0.10", false},
		{"100.64.0.1", false},
		{"169.254.169.254", false},
		{"0.0.0.0", false},
		{"198.18.0.1", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"::1", false},
		{"::", false},
		{"fd00::1", false},
		{"fe80::1", false},
		{"::ffff:10.0.0.1", false},
		{"64:ff9b::a00:1", false}, // 10.0.0.1 behind NAT64
		{"2002:a00:1::", false},   // 6to4 of 10.0.0.1
		{"2001:db8::1", false},
		{"::a00:1", false}, // IPv4-compatible 10.0.0.1
		{"3fff::1", false},
		{"5f00::1", false},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"64:ff9b::808:808", true}, // 8.8.8.8 behind NAT64
		{"2606:4700:4700::1111", true},
	} {
		err := checkPublic(netip.MustParseAddr(tt.ip))
		if (err == nil) != tt.public {
			t.Errorf("checkPublic(%s) = %v, want public %t", tt.ip, err, tt.public)
		}
	}
}

// serviceURL is a URL naming a Service of namespace team-a, on the port srv
// listens on.
func serviceURL(t *testing.T, srv string) string {
	t.Helper()
	u, err := url.Parse(srv)
	if err != nil {
		t.Fatal(err)
	}
	return "http://sink.team-a.svc.cluster.local:" + u.Port() + "/hooks/done"
}

// toPod is the route of a tenant's webhook to a Pod of its own Service at
// ip and the port rawURL names.
func toPod(t *testing.T, ip, rawURL string) Route {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return Route{Tenant: true, Endpoints: []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(port))}}
}

func TestTenantRoutes(t *testing.T) {
	loopback := netip.MustParseAddr("127.0.0.1")
	for _, tt := range []struct {
		name    string
		allow   []string
		route   Route
		service bool // the URL names the Service; else the receiver's own address
		// endpoint, when valid, is the address of the Service's Pod, on
		// the receiver's port.
		endpoint netip.Addr
		// want is what Summary says; "delivered" when the receiver got it.
		want string
	}{
		{name: "platform, loopback", want: "delivered"},
		{name: "tenant, loopback", route: Route{Tenant: true},
			want: "refused: a loopback address; a tenant's webhook may reach public addresses and Services of its own namespace (--webhook-allow admits others)"},
		{name: "tenant, loopback the allow list admits", allow: []string{"127.0.0.1"}, route: Route{Tenant: true}, want: "delivered"},
		{name: "tenant, loopback another allow list", allow: []string{"hooks.example.com"}, route: Route{Tenant: true},
			want: "refused: host 127.0.0.1 is not in --webhook-allow"},
		{name: "tenant, own Service", route: Route{Tenant: true}, endpoint: loopback, service: true, want: "delivered"},
		{name: "tenant, own Service under an allow list", allow: []string{"hooks.example.com"}, route: Route{Tenant: true}, endpoint: loopback, service: true, want: "delivered"},
		{name: "tenant, a Service endpoint on the deny list", route: Route{Tenant: true}, endpoint: netip.MustParseAddr("169.254.169.254"), service: true,
			want: "refused: cloud metadata address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hosts []string
			var hits atomic.Int64
			srv := startReceiver(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				hosts = append(hosts, r.Host)
			}))
			allow, err := ParseAllowList(tt.allow)
			if err != nil {
				t.Fatal(err)
			}
			s := NewSender(testOptions(func(o *Options) { o.Allow = allow }))
			target := srv.URL + "/hooks/done"
			if tt.service {
				target = serviceURL(t, srv.URL)
			}
			if tt.endpoint.IsValid() {
				tt.route.Endpoints = toPod(t, tt.endpoint.String(), srv.URL).Endpoints
			}
			d, err := s.Deliver(t.Context(), tt.route, target, []byte("{}"), "k")
			got := Summary(d, err)
			if tt.want == "delivered" {
				if err != nil || hits.Load() != 1 {
					t.Fatalf("%s: %v (%s), %d requests; want delivered once", tt.name, err, got, hits.Load())
				}
				if tt.service && !strings.HasPrefix(hosts[0], "sink.team-a.svc.cluster.local:") {
					t.Errorf("Host %q, want the Service's name", hosts[0])
				}
				return
			}
			if got != tt.want || hits.Load() != 0 {
				t.Errorf("Summary = %q after %d requests, want %q and none", got, hits.Load(), tt.want)
			}
		})
	}
}

// The platform's connections are never lent to a tenant: a tenant's request
// to a receiver the platform just used is refused all the same.
func TestTenantNeverReusesAPlatformConnection(t *testing.T) {
	srv, hits := hitCounter(t)
	s := NewSender(testOptions())
	if _, err := s.Send(t.Context(), srv.URL, []byte("{}"), "k"); err != nil {
		t.Fatal(err)
	}
	d, err := s.Deliver(t.Context(), Route{Tenant: true}, srv.URL, []byte("{}"), "k")
	if !strings.HasPrefix(Summary(d, err), "refused: a loopback address") || hits.Load() != 1 {
		t.Errorf("tenant after platform: %q, %d requests in all; want refused after the platform's one", Summary(d, err), hits.Load())
	}
}

// Hosts are compared in the form they are dialled: a URL whose host is not
// in ASCII form is refused, since the transport keys its pool on the host
// made ASCII (hook.a.ｓｖｃ, in full-width letters, is hook.a.svc) while the
// route judged the host as written (no Service name: a public host). Tenant
// team-b's request would otherwise ride team-a's pooled connection to its
// Service, and no dial check would run.
func TestTenantHostIsComparedAsDialled(t *testing.T) {
	var hosts []string
	var mu sync.Mutex
	srv := startReceiver(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
	}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	s := NewSender(testOptions())
	teamA := toPod(t, "127.0.0.1", srv.URL)
	teamA.Scope = "team-a"
	if _, err := s.Deliver(t.Context(), teamA, fmt.Sprintf("http://hook.team-a.svc:%d/a", port), []byte("{}"), "k"); err != nil {
		t.Fatalf("team-a to its own Service: %v", err)
	}
	for _, host := range []string{
		"hook.team-a.ｓｖｃ",         // full-width letters
		"hook.team-a.%EF%BD%93vc", // the same, percent-encoded
		"HOOK.TEAM-A.ЅVC",         // a Cyrillic capital DZE for the S
		"hook.team-a.svc。",        // an ideographic full stop
		"hook.team-a.s\u00advc",   // a soft hyphen, which IDNA drops
		"bücher.example",          // an IDN written in Unicode: xn--bcher-kva.example is its form
	} {
		raw := fmt.Sprintf("http://%s:%d/b", host, port)
		d, err := s.Deliver(t.Context(), Route{Tenant: true, Scope: "team-b"}, raw, []byte("{}"), "k")
		if got := Summary(d, err); !strings.HasPrefix(got, "refused: invalid url: host ") || !strings.Contains(got, "is not in ASCII form") || d.Attempts != 0 {
			t.Errorf("team-b to %s: %q after %d attempts, want refused before any", host, got, d.Attempts)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) != 1 {
		t.Errorf("requests with Host %q: want team-a's only", hosts)
	}
}

// What a tenant reads of a failure names no network detail: the status
// code, a time-out, or no connection.
func TestSummary(t *testing.T) {
	answering := func(status int) string {
		srv := startReceiver(t, &testReceiver{statuses: []int{status}})
		return serviceURL(t, srv.URL)
	}
	silent := func() string {
		srv := startReceiver(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Second) }))
		return serviceURL(t, srv.URL)
	}
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return "http://sink.team-a.svc:" + addr[strings.LastIndex(addr, ":")+1:] + "/"
	}
	for _, tt := range []struct {
		name, url string
		opts      func(*Options)
		want      string
	}{
		{"503 thrice", answering(503), nil, "failed: HTTP 503 after 3 attempts"},
		{"404", answering(404), nil, "failed: HTTP 404"},
		{"no answer in time", silent(), func(o *Options) { o.Timeout, o.MaxAttempts = 100*time.Millisecond, 1 }, "timed out"},
		{"nothing listens", closed(), func(o *Options) { o.MaxAttempts = 1 }, "failed: no connection"},
		{"not http", "gopher://sink.team-a.svc/", nil, `refused: invalid url: scheme "gopher" is not http or https`},
	} {
		opts := testOptions()
		if tt.opts != nil {
			tt.opts(&opts)
		}
		tenant := Route{Tenant: true, Endpoints: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:80")}}
		if !strings.HasPrefix(tt.url, "gopher:") {
			tenant = toPod(t, "127.0.0.1", tt.url)
		}
		d, err := NewSender(opts).Deliver(t.Context(), tenant, tt.url, []byte("{}"), "k")
		if got := Summary(d, err); got != tt.want {
			t.Errorf("%s: Summary = %q (error %v), want %q", tt.name, got, err, tt.want)
		}
	}
	if got := Summary(Delivery{Attempts: 1, StatusCode: 204}, nil); got != "delivered: HTTP 204" {
		t.Errorf("Summary of a delivery = %q", got)
	}
}

// A receiver is named by scheme and host in every error: a path or query
// may be a credential.
func TestErrorsNameTheOriginOnly(t *testing.T) {
	srv := startReceiver(t, &testReceiver{statuses: []int{500}})
	_, err := NewSender(testOptions(func(o *Options) { o.MaxAttempts = 1 })).Send(t.Context(), srv.URL+"/services/T000/B000/XXXXsecret?token=abc", []byte("{}"), "k")
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "token") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("error %v: want the receiver's origin %s and nothing of its path or query", err, srv.URL)
	}
}

// After an attempt to a receiver timed out, later Sends to it through the
// same Sender (or a copy) are deferred at once; other receivers are not. A
// Send of the platform's under way goes on (a tenant's does not: see
// TestTenantScopeSpendsItsSilentReceivers).
func TestSilentReceiverDefersLaterSends(t *testing.T) {
	release := make(chan struct{})
	silent := startReceiver(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer close(release)
	other, hits := hitCounter(t)
	s := NewSender(testOptions(func(o *Options) { o.Timeout, o.MaxAttempts = 200*time.Millisecond, 2 }))
	d, err := s.Send(t.Context(), silent.URL+"/a", []byte("{}"), "k1")
	if Deferred(err) || d.Attempts != 2 || Summary(d, err) != "timed out after 2 attempts" {
		t.Fatalf("first Send: %+v, %v; want both attempts timed out", d, err)
	}
	start := time.Now()
	for _, sender := range []*Sender{s, s.WithSigningKey([]byte("another key"))} {
		d, err = sender.Send(t.Context(), silent.URL+"/b", []byte("{}"), "k2")
		if !Deferred(err) || d.Attempts != 0 || !strings.HasPrefix(Summary(d, err), "deferred: ") {
			t.Errorf("later Send: %+v, %v (%q); want deferred without an attempt", d, err, Summary(d, err))
		}
	}
	if !Deferred(s.Silent("", silent.URL+"/c")) || s.Silent("", other.URL) != nil || s.Silent("team-a", silent.URL) != nil {
		t.Error("Silent does not say which receiver, in which scope, timed out")
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("deferred Sends took %s", took)
	}
	if _, err := s.Send(t.Context(), other.URL, []byte("{}"), "k3"); err != nil || hits.Load() != 1 {
		t.Errorf("another receiver: %v, %d requests; want it delivered", err, hits.Load())
	}
	if _, err := NewSender(testOptions()).Send(t.Context(), other.URL, []byte("{}"), "k4"); err != nil {
		t.Errorf("a new Sender (a new sweep): %v", err)
	}
}

// A receiver whose TLS handshake stalls times out like one that does not
// answer, whatever the timeout, and defers later Sends.
func TestStalledHandshakeTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // accepted, never a byte of TLS
		}
	}()
	s := NewSender(testOptions(func(o *Options) { o.Timeout, o.MaxAttempts = 300*time.Millisecond, 1 }))
	d, err := s.Send(t.Context(), "https://"+l.Addr().String()+"/", []byte("{}"), "k")
	if got := Summary(d, err); got != "timed out" {
		t.Errorf("Summary = %q (%v), want timed out", got, err)
	}
	if _, err := s.Send(t.Context(), "https://"+l.Addr().String()+"/", []byte("{}"), "k"); !Deferred(err) {
		t.Errorf("next Send: %v, want deferred", err)
	}
}

// A receiver that did not answer a tenant in time defers every tenant's
// later Sends to it (many namespaces naming one host that never answers
// cost a sweep one timeout, not one each), not the platform's; and the
// platform's silent receiver defers no tenant's.
func TestSilenceIsPerReceiverForTenants(t *testing.T) {
	release := make(chan struct{})
	srv := startReceiver(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			return
		}
		select {
		case <-release:
		case <-time.After(time.Second):
		}
	}))
	defer close(release)
	s := NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow = 200*time.Millisecond, 1, mustAllow(t, "127.0.0.1")
	}))
	tenantA, tenantB := Route{Tenant: true, Scope: "team-a"}, Route{Tenant: true, Scope: "team-b"}
	if _, err := s.Deliver(t.Context(), tenantA, srv.URL+"/slow", []byte("{}"), "k"); Deferred(err) || err == nil {
		t.Fatalf("first Send: %v, want timed out", err)
	}
	if _, err := s.Deliver(t.Context(), tenantA, srv.URL+"/quick", []byte("{}"), "k"); !errors.Is(err, ErrDeferred) || errors.Is(err, errScopeSilent) {
		t.Errorf("team-a after its timeout: %v, want deferred for the receiver", err)
	}
	if err := s.Silent("team-b", srv.URL); !errors.Is(err, ErrDeferred) || errors.Is(err, errScopeSilent) {
		t.Errorf("Silent(team-b) after team-a's timeout = %v, want deferred for the receiver", err)
	}
	if d, err := s.Deliver(t.Context(), tenantB, srv.URL+"/quick", []byte("{}"), "k"); !errors.Is(err, ErrDeferred) || d.Attempts != 0 {
		t.Errorf("team-b after team-a's timeout: %+v, %v; want deferred without an attempt", d, err)
	}
	if _, err := s.Deliver(t.Context(), Route{}, srv.URL+"/quick", []byte("{}"), "k"); err != nil {
		t.Errorf("the platform after a tenant's timeout: %v, want delivered", err)
	}
	other := NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow = 200*time.Millisecond, 1, mustAllow(t, "127.0.0.1")
	}))
	if _, err := other.Deliver(t.Context(), Route{}, srv.URL+"/slow", []byte("{}"), "k"); Deferred(err) || err == nil {
		t.Fatalf("the platform's first Send: %v, want timed out", err)
	}
	if _, err := other.Deliver(t.Context(), Route{}, srv.URL+"/quick", []byte("{}"), "k"); !errors.Is(err, ErrDeferred) {
		t.Errorf("the platform after its timeout: %v, want deferred", err)
	}
	if _, err := other.Deliver(t.Context(), tenantB, srv.URL+"/quick", []byte("{}"), "k"); err != nil {
		t.Errorf("a tenant after the platform's timeout: %v, want delivered", err)
	}
}

// Once maxSilentPerScope receivers of a tenant's scope have timed out, every
// later Send of that scope is deferred, whatever its receiver, and a Send
// under way retries no more; other scopes and the platform's are not. A
// tenant naming a receiver that never answers per manager (a port each)
// costs a sweep maxSilentPerScope timeouts, not one per manager.
func TestTenantScopeSpendsItsSilentReceivers(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int32
	hold := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	})
	var silent []string
	for range maxSilentPerScope + 3 {
		silent = append(silent, startReceiver(t, hold).URL)
	}
	defer close(release)
	s := NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow = 200*time.Millisecond, 3, mustAllow(t, "127.0.0.1")
		o.Backoff = func(int) time.Duration { return 0 }
	}))
	hopper := Route{Tenant: true, Scope: "team-a"}
	for i, u := range silent[:maxSilentPerScope] {
		// A receiver that timed out is tried no more by a tenant's
		// delivery: one attempt, not 3.
		const want = "timed out"
		if d, err := s.Deliver(t.Context(), hopper, u, []byte("{}"), "k"); Deferred(err) || Summary(d, err) != want {
			t.Fatalf("receiver %d of team-a: %+v, %q; want %q", i, d, Summary(d, err), want)
		}
	}
	before := hits.Load()
	for i, u := range silent[maxSilentPerScope:] {
		d, err := s.Deliver(t.Context(), hopper, u, []byte("{}"), "k")
		want := fmt.Sprintf("deferred: %d receivers of this namespace did not answer a request of this sweep in time", maxSilentPerScope)
		if !Deferred(err) || d.Attempts != 0 || Summary(d, err) != want {
			t.Errorf("receiver %d of team-a, after %d timed out: %+v, %q; want %q", maxSilentPerScope+i, maxSilentPerScope, d, Summary(d, err), want)
		}
		if err := s.Silent("team-a", u); !errors.Is(err, errScopeSilent) {
			t.Errorf("Silent(team-a, receiver %d) = %v, want the scope's deferral", maxSilentPerScope+i, err)
		}
	}
	if got := hits.Load() - before; got != 0 {
		t.Errorf("%d requests after team-a spent its silent receivers, want none", got)
	}
	for _, r := range []Route{{Tenant: true, Scope: "team-b"}, {}} {
		if _, err := s.Deliver(t.Context(), r, silent[len(silent)-1], []byte("{}"), "k"); Deferred(err) {
			t.Errorf("scope %q: deferred by team-a's silent receivers", r.Scope)
		}
	}

	// Sends under way when the scope spends its last silent receiver stop
	// after the attempt that timed out: one attempt each, not three.
	s = NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow = 200*time.Millisecond, 3, mustAllow(t, "127.0.0.1")
		o.Backoff = func(int) time.Duration { return 150 * time.Millisecond }
	}))
	var wg sync.WaitGroup
	attempts := make([]int, len(silent))
	for i, u := range silent {
		wg.Go(func() {
			d, _ := s.Deliver(t.Context(), hopper, u, []byte("{}"), "k")
			attempts[i] = d.Attempts
		})
	}
	wg.Wait()
	for i, n := range attempts {
		if n > 1 {
			t.Errorf("receiver %d, under way together: %d attempts, want one", i, n)
		}
	}
}

func mustAllow(t *testing.T, entries ...string) *AllowList {
	t.Helper()
	a, err := ParseAllowList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Route.Recheck runs before every retry: an error refuses the attempt in
// the tenant's words, and the receiver hears nothing more.
func TestRecheckRefusesARetry(t *testing.T) {
	var hits atomic.Int32
	srv := startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	s := NewSender(testOptions(func(o *Options) {
		o.MaxAttempts, o.Allow = 3, mustAllow(t, "127.0.0.1")
		o.Backoff = func(int) time.Duration { return 0 }
	}))
	checks := 0
	route := toPod(t, "127.0.0.1", srv.URL)
	route.Scope = "team-a"
	route.Recheck = func(context.Context) ([]netip.AddrPort, error) {
		checks++
		return nil, errors.New("refused: since the first attempt, the Service sink has no selector")
	}
	d, err := s.Deliver(t.Context(), route, srv.URL+"/hook", []byte("{}"), "k")
	if got := Summary(d, err); got != "refused: since the first attempt, the Service sink has no selector" || hits.Load() != 1 || checks != 1 {
		t.Errorf("Summary %q, %d requests, %d checks: want the retry refused after one request and one check", got, hits.Load(), checks)
	}
	route.Recheck = func(context.Context) ([]netip.AddrPort, error) { checks++; return route.Endpoints, nil }
	checks, before := 0, hits.Load()
	if d, err := s.Deliver(t.Context(), route, srv.URL+"/hook", []byte("{}"), "k"); Summary(d, err) != "failed: HTTP 503 after 3 attempts" || hits.Load()-before != 3 || checks != 2 {
		t.Errorf("Summary %q, %d requests, %d checks: want 3 attempts, a check before each retry", Summary(d, err), hits.Load()-before, checks)
	}
}

// A delivery that failed after holding its worker for an attempt's timeout
// or longer (answers slow to fail, Retry-After waits) counts as a timeout:
// its receiver is deferred for the rest of the sweep for every tenant (not
// the platform), and a tenant whose receivers do so twice has its later
// deliveries deferred.
func TestSlowFailureCountsAsSilence(t *testing.T) {
	var hits atomic.Int32
	busy := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	slow := []string{startReceiver(t, busy).URL, startReceiver(t, busy).URL, startReceiver(t, busy).URL}
	s := NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow = 500*time.Millisecond, 2, mustAllow(t, "127.0.0.1")
		o.Backoff = nil // the default: the receiver's Retry-After
	}))
	tenant := Route{Tenant: true, Scope: "team-a"}
	for i, u := range slow[:2] {
		if d, err := s.Deliver(t.Context(), tenant, u, []byte("{}"), "k"); Deferred(err) || d.Attempts != 2 || d.Duration < time.Second {
			t.Fatalf("receiver %d: %+v, %v; want two attempts a Retry-After apart", i, d, err)
		}
	}
	before := hits.Load()
	if _, err := s.Deliver(t.Context(), tenant, slow[2], []byte("{}"), "k"); !errors.Is(err, errScopeSilent) {
		t.Errorf("team-a's third receiver: %v, want deferred for the namespace", err)
	}
	if err := s.Silent("team-a", slow[0]); !Deferred(err) {
		t.Errorf("team-a to its first receiver: %v, want deferred", err)
	}
	if hits.Load() != before {
		t.Errorf("%d requests after the deferrals, want none", hits.Load()-before)
	}
	// The receiver is silent for every tenant, not for the platform.
	if _, err := s.Deliver(t.Context(), Route{Tenant: true, Scope: "team-b"}, slow[0], []byte("{}"), "k"); !errors.Is(err, ErrDeferred) || errors.Is(err, errScopeSilent) || hits.Load() != before {
		t.Errorf("another tenant to team-a's first receiver: %v after %d requests, want deferred for the receiver", err, hits.Load()-before)
	}
	if _, err := s.Deliver(t.Context(), Route{}, slow[0], []byte("{}"), "k"); Deferred(err) || hits.Load() == before {
		t.Errorf("the platform to team-a's first receiver: %v after %d requests, want it tried", err, hits.Load()-before)
	}
	// A fast failure is no silence.
	fast := startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	s = NewSender(testOptions(func(o *Options) {
		o.Timeout, o.MaxAttempts, o.Allow = 500*time.Millisecond, 1, mustAllow(t, "127.0.0.1")
	}))
	for range 2 {
		if _, err := s.Deliver(t.Context(), tenant, fast.URL, []byte("{}"), "k"); Deferred(err) || err == nil {
			t.Errorf("a receiver that fails at once: %v, want it tried again", err)
		}
	}
}

// A tenant's Pods are dialled at the endpoints read before each attempt,
// never over a pooled connection: a retry goes to the endpoints Recheck
// returns, and two deliveries to the same Pod dial twice.
func TestPodEndpointsAreDialledAfreshEachAttempt(t *testing.T) {
	var busyHits, okHits atomic.Int32
	busy := startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		busyHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	var conns atomic.Int32
	ok := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { okHits.Add(1) }))
	ok.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	ok.Start()
	t.Cleanup(ok.Close)
	s := NewSender(testOptions())
	moved := toPod(t, "127.0.0.1", ok.URL).Endpoints
	route := toPod(t, "127.0.0.1", busy.URL)
	route.Recheck = func(context.Context) ([]netip.AddrPort, error) { return moved, nil }
	if d, err := s.Deliver(t.Context(), route, "http://sink.team-a.svc/hook", []byte("{}"), "k"); err != nil || d.Attempts != 2 || busyHits.Load() != 1 || okHits.Load() != 1 {
		t.Errorf("%+v, %v: %d requests to the first endpoint, %d to the one read again; want one each", d, err, busyHits.Load(), okHits.Load())
	}
	route = Route{Tenant: true, Endpoints: moved}
	for range 2 {
		if _, err := s.Deliver(t.Context(), route, "http://sink.team-a.svc/hook", []byte("{}"), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if conns.Load() != 3 {
		t.Errorf("%d connections for 3 requests to the Pod, want one each", conns.Load())
	}
	// Recheck that finds no endpoint ends the delivery.
	route.Recheck = func(context.Context) ([]netip.AddrPort, error) { return nil, nil }
	route.Endpoints = toPod(t, "127.0.0.1", busy.URL).Endpoints
	before := busyHits.Load()
	if d, err := s.Deliver(t.Context(), route, "http://sink.team-a.svc/hook", []byte("{}"), "k"); Summary(d, err) != "refused: no endpoint of the Service to dial" || busyHits.Load()-before != 1 {
		t.Errorf("%q after %d requests, want refused after one", Summary(d, err), busyHits.Load()-before)
	}
}
