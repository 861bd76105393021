package webhook

import (
	"bufio"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testContext bounds a test that would hang if the sender's own timeouts
// failed, so that it fails instead.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// testOptions are options for tests: no backoff, so that retries are
// immediate.
func testOptions(mutators ...func(*Options)) Options {
	o := Options{
		Timeout:     5 * time.Second,
		MaxAttempts: 3,
		UserAgent:   "nsman/test",
		Backoff:     func(int) time.Duration { return 0 },
	}
	for _, m := range mutators {
		m(&o)
	}
	return o
}

// recordedRequest is what a receiver saw.
type recordedRequest struct {
	method        string
	header        http.Header
	contentLength int64
	body          []byte
}

// testReceiver answers with statuses in turn (the last one repeats) and
// records every request.
type testReceiver struct {
	statuses []int
	header   http.Header // added to every response

	mu       sync.Mutex
	requests []recordedRequest
}

func (rc *testReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	n := len(rc.requests)
	rc.requests = append(rc.requests, recordedRequest{r.Method, r.Header.Clone(), r.ContentLength, body})
	rc.mu.Unlock()
	for k, v := range rc.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rc.statuses[min(n, len(rc.statuses)-1)])
}

func (rc *testReceiver) recorded() []recordedRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

// startReceiver serves rc on loopback until the test ends.
func startReceiver(t *testing.T, rc http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return srv
}

// hitCounter counts requests; a test that must send nothing expects zero.
func hitCounter(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := startReceiver(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	return srv, &hits
}

// countingTransport wraps a sender's transport to count round trips and the
// response body bytes the sender reads.
type countingTransport struct {
	base       http.RoundTripper
	roundTrips atomic.Int64
	bodyRead   atomic.Int64
	bodyClosed atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.roundTrips.Add(1)
	resp, err := c.base.RoundTrip(r)
	if resp != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, t: c}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	t *countingTransport
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.t.bodyRead.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error {
	b.t.bodyClosed.Add(1)
	return b.ReadCloser.Close()
}

// withCountingTransport wraps s's transport and returns the counter.
func withCountingTransport(s *Sender) *countingTransport {
	c := &countingTransport{base: s.client.Transport}
	s.client.Transport = c
	return c
}

func TestSendRequest(t *testing.T) {
	key := []byte("s3cret")
	tests := []struct {
		name       string
		signingKey []byte
		body       []byte
	}{
		{name: "unsigned", body: []byte(`{"namespace":"e2e"}`)},
		{name: "signed", signingKey: key, body: []byte(`{"namespace":"e2e"}`)},
		{name: "signed empty body", signingKey: key, body: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &testReceiver{statuses: []int{500, 503, 200}}
			srv := startReceiver(t, rc)
			s := NewSender(testOptions(func(o *Options) { o.SigningKey = tt.signingKey }))

			body := tt.body
			d, err := s.Send(t.Context(), srv.URL+"/hook", body, "key-1") // the same key on every attempt
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if d.Attempts != 3 || d.StatusCode != 200 {
				t.Errorf("Delivery = %+v, want 3 attempts ending in 200", d)
			}
			reqs := rc.recorded()
			if len(reqs) != 3 {
				t.Fatalf("receiver saw %d requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if r.method != http.MethodPost {
					t.Errorf("attempt %d: method %s, want POST", i+1, r.method)
				}
				for h, want := range map[string]string{
					"Content-Type":    "application/json",
					"User-Agent":      "nsman/test",
					"Idempotency-Key": "key-1",
				} {
					if got := r.header.Get(h); got != want {
						t.Errorf("attempt %d: %s = %q, want %q", i+1, h, got, want)
					}
				}
				if string(r.body) != string(body) || r.contentLength != int64(len(body)) {
					t.Errorf("attempt %d: body %q with Content-Length %d, want %q", i+1, r.body, r.contentLength, body)
				}
				ts, sig := r.header.Get("X-Nsman-Timestamp"), r.header.Get("X-Nsman-Signature")
				if tt.signingKey == nil {
					if ts != "" || sig != "" {
						t.Errorf("attempt %d: unsigned sender sent signature headers %q, %q", i+1, ts, sig)
					}
					continue
				}
				if !regexp.MustCompile(`^[0-9]+$`).MatchString(ts) {
					t.Errorf("attempt %d: X-Nsman-Timestamp %q, want unix seconds", i+1, ts)
				}
				if !regexp.MustCompile(`^sha256=[0-9a-f]{64}$`).MatchString(sig) {
					t.Errorf("attempt %d: X-Nsman-Signature %q, want sha256=<64 lowercase hex>", i+1, sig)
				}
				// The documented formula, computed independently of the sender.
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(ts + "." + string(body)))
				if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sig != want {
					t.Errorf("attempt %d: X-Nsman-Signature %q, want %q", i+1, sig, want)
				}
				if err := VerifySignature(r.header, r.body, key, time.Now(), time.Minute); err != nil {
					t.Errorf("attempt %d: VerifySignature: %v", i+1, err)
				}
			}
		})
	}
}

func TestSendDefaultUserAgent(t *testing.T) {
	rc := &testReceiver{statuses: []int{200}}
	srv := startReceiver(t, rc)
	s := NewSender(testOptions(func(o *Options) { o.UserAgent = "" }))
	if _, err := s.Send(t.Context(), srv.URL, nil, "k"); err != nil {
		t.Fatal(err)
	}
	if got := rc.recorded()[0].header.Get("User-Agent"); got != "nsman" {
		t.Errorf("User-Agent = %q, want nsman", got)
	}
}

func TestSendStatus(t *testing.T) {
	trap, trapHits := hitCounter(t)
	tests := []struct {
		name         string
		statuses     []int
		maxAttempts  int
		wantAttempts int
		wantStatus   int
		wantErr      string // the message after "webhook <url>: "; empty for success
	}{
		{name: "200", statuses: []int{200}, wantAttempts: 1, wantStatus: 200},
		{name: "202", statuses: []int{202}, wantAttempts: 1, wantStatus: 202},
		{name: "204", statuses: []int{204}, wantAttempts: 1, wantStatus: 204},
		{name: "500 until attempts run out", statuses: []int{500}, wantAttempts: 3, wantStatus: 500, wantErr: "HTTP 500 after 3 attempts"},
		{name: "502 then 200", statuses: []int{502, 200}, wantAttempts: 2, wantStatus: 200},
		{name: "503 twice then 200", statuses: []int{503, 503, 200}, wantAttempts: 3, wantStatus: 200},
		{name: "504 with one attempt allowed", statuses: []int{504, 200}, maxAttempts: 1, wantAttempts: 1, wantStatus: 504, wantErr: "HTTP 504 after 1 attempt"},
		{name: "429 then 200", statuses: []int{429, 200}, wantAttempts: 2, wantStatus: 200},
		{name: "429 until attempts run out", statuses: []int{429}, maxAttempts: 5, wantAttempts: 5, wantStatus: 429, wantErr: "HTTP 429 after 5 attempts"},
		{name: "400 not retried", statuses: []int{400, 200}, wantAttempts: 1, wantStatus: 400, wantErr: "HTTP 400 after 1 attempt"},
		{name: "401 not retried", statuses: []int{401, 200}, wantAttempts: 1, wantStatus: 401, wantErr: "HTTP 401 after 1 attempt"},
		{name: "404 not retried", statuses: []int{404, 200}, wantAttempts: 1, wantStatus: 404, wantErr: "HTTP 404 after 1 attempt"},
		{name: "409 not retried", statuses: []int{409, 200}, wantAttempts: 1, wantStatus: 409, wantErr: "HTTP 409 after 1 attempt"},
		{name: "301 not followed", statuses: []int{301, 200}, wantAttempts: 1, wantStatus: 301, wantErr: "HTTP 301 after 1 attempt"},
		{name: "302 not followed", statuses: []int{302, 200}, wantAttempts: 1, wantStatus: 302, wantErr: "HTTP 302 after 1 attempt"},
		{name: "307 not followed", statuses: []int{307, 200}, wantAttempts: 1, wantStatus: 307, wantErr: "HTTP 307 after 1 attempt"},
		{name: "308 not followed", statuses: []int{308, 200}, wantAttempts: 1, wantStatus: 308, wantErr: "HTTP 308 after 1 attempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &testReceiver{statuses: tt.statuses, header: http.Header{"Location": {trap.URL + "/elsewhere"}}}
			srv := startReceiver(t, rc)
			s := NewSender(testOptions(func(o *Options) { o.MaxAttempts = tt.maxAttempts }))
			url := srv.URL + "/hook"

			d, err := s.Send(t.Context(), url, []byte("{}"), "k")
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Send: %v", err)
				}
			} else if want := "webhook " + srv.URL + ": " + tt.wantErr; err == nil || err.Error() != want {
				// The receiver is named by scheme and host: no path.
				t.Errorf("Send error = %v, want %q", err, want)
			}
			if d.Attempts != tt.wantAttempts || d.StatusCode != tt.wantStatus {
				t.Errorf("Delivery = %+v, want %d attempts, status %d", d, tt.wantAttempts, tt.wantStatus)
			}
			if n := len(rc.recorded()); n != tt.wantAttempts {
				t.Errorf("receiver saw %d requests, want %d", n, tt.wantAttempts)
			}
			if n := trapHits.Load(); n != 0 {
				t.Errorf("redirect target got %d requests, want 0", n)
			}
		})
	}
}

func TestSendRefusesWithoutNetworkIO(t *testing.T) {
	srv, hits := hitCounter(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name string
		url  string
		key  string
	}{
		{name: "file", url: "file:///etc/passwd", key: "k"},
		{name: "ftp", url: "ftp://" + host + "/x", key: "k"},
		{name: "gopher", url: "gopher://" + host + "/", key: "k"},
		{name: "scheme-less host and port", url: host, key: "k"},
		{name: "relative", url: "/hook", key: "k"},
		{name: "empty", url: "", key: "k"},
		{name: "empty host", url: "http:///hook", key: "k"},
		{name: "port without host", url: fmt.Sprintf("http://:%d/", srv.Listener.Addr().(*net.TCPAddr).Port), key: "k"},
		{name: "opaque", url: "http:" + host, key: "k"},
		{name: "unparsable", url: "http://[::1", key: "k"},
		{name: "no idempotency key", url: srv.URL, key: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSender(testOptions())
			ct := withCountingTransport(s)
			d, err := s.Send(t.Context(), tt.url, []byte("{}"), tt.key)
			if err == nil || !strings.HasPrefix(err.Error(), "webhook") {
				t.Errorf("Send(%q) error = %v, want a webhook error", tt.url, err)
			}
			if d.Attempts != 0 || ct.roundTrips.Load() != 0 || hits.Load() != 0 {
				t.Errorf("Send(%q): %d attempts, %d round trips, %d requests received; want none", tt.url, d.Attempts, ct.roundTrips.Load(), hits.Load())
			}
		})
	}
}

func TestSendAcceptsHTTPSchemes(t *testing.T) {
	srv := startReceiver(t, &testReceiver{statuses: []int{200}})
	for _, url := range []string{srv.URL, strings.Replace(srv.URL, "http://", "HTTP://", 1), strings.Replace(srv.URL, "http://", "http://user:pass@", 1)} {
		if _, err := NewSender(testOptions()).Send(t.Context(), url, nil, "k"); err != nil {
			t.Errorf("Send(%q): %v", url, err)
		}
	}
}

// trickleListener accepts connections, reads the request head and then writes
// head one byte every interval, never finishing.
func trickleListener(t *testing.T, head string, interval time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
					return
				}
				for i := 0; ; i = (i + 1) % len(head) {
					select {
					case <-stop:
						return
					case <-time.After(interval):
					}
					if _, err := conn.Write([]byte{head[i]}); err != nil {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

func TestSendNetworkErrors(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name         string
		url          func(t *testing.T) string
		wantAttempts int
		wantErr      func(error) bool
		wantErrText  string
		minDuration  time.Duration
	}{
		{
			name: "connection refused",
			url: func(t *testing.T) string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				ln.Close()
				return "http://" + ln.Addr().String() + "/"
			},
			wantAttempts: 3,
			wantErr:      func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) },
		},
		{
			name: "connection dropped without a response",
			url: func(t *testing.T) string {
				return startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						conn.Close()
					}
				})).URL
			},
			wantAttempts: 3,
			wantErr:      func(err error) bool { return errors.Is(err, io.EOF) },
		},
		{
			name: "receiver hangs",
			url: func(t *testing.T) string {
				release := make(chan struct{})
				srv := startReceiver(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					select {
					case <-r.Context().Done():
					case <-release:
					}
				}))
				t.Cleanup(func() { close(release) }) // before srv.Close
				return srv.URL
			},
			wantAttempts: 3,
			wantErr:      func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
			wantErrText:  "no response within 200ms",
			minDuration:  3 * timeout,
		},
		{
			name:         "receiver trickles the status line",
			url:          func(t *testing.T) string { return trickleListener(t, "HTTP/1.1 200 OK\r\n", 10*time.Millisecond) },
			wantAttempts: 3,
			wantErr:      func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
			minDuration:  3 * timeout,
		},
		{
			name: "oversized response headers",
			url: func(t *testing.T) string {
				return startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("X-Big", strings.Repeat("x", 100<<10))
				})).URL
			},
			wantAttempts: 3,
			wantErr:      func(err error) bool { return strings.Contains(err.Error(), "exceeded") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSender(testOptions(func(o *Options) { o.Timeout = timeout }))
			d, err := s.Send(testContext(t, 10*time.Second), tt.url(t), []byte("{}"), "k")
			if err == nil || !tt.wantErr(err) || !strings.Contains(err.Error(), tt.wantErrText) {
				t.Fatalf("Send error = %v, not the expected one", err)
			}
			if d.Attempts != tt.wantAttempts || d.StatusCode != 0 {
				t.Errorf("Delivery = %+v, want %d attempts and no status", d, tt.wantAttempts)
			}
			if d.Duration < tt.minDuration || d.Duration > time.Duration(tt.wantAttempts)*timeout+2*time.Second {
				t.Errorf("Duration = %s, want between %s and the timeouts of %d attempts", d.Duration, tt.minDuration, tt.wantAttempts)
			}
		})
	}
}

// TestSendMixedFailures: a dropped connection is a network error like
// any other, every request on the wire is a counted attempt, and the Delivery
// describes the last one.
func TestSendMixedFailures(t *testing.T) {
	const drop = 0
	tests := []struct {
		name       string
		answers    []int // per attempt: an HTTP status, or drop
		wantStatus int
		wantErr    bool
	}{
		{name: "dropped twice then 200", answers: []int{drop, drop, 200}, wantStatus: 200},
		{name: "503 then dropped", answers: []int{503, drop, drop}, wantStatus: 0, wantErr: true},
		{name: "dropped then 503", answers: []int{drop, drop, 503}, wantStatus: 503, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			srv := startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				answer := tt.answers[min(n.Add(1), int64(len(tt.answers)))-1]
				if answer != drop {
					w.WriteHeader(answer)
					return
				}
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
			}))
			d, err := NewSender(testOptions()).Send(t.Context(), srv.URL, []byte("{}"), "k")
			if (err != nil) != tt.wantErr || d.Attempts != 3 || d.StatusCode != tt.wantStatus {
				t.Errorf("Send = %+v, %v; want 3 attempts, status %d, error: %v", d, err, tt.wantStatus, tt.wantErr)
			}
			// http.Transport replays a POST with an Idempotency-Key when a
			// reused connection drops; the sender must not let it.
			if got := n.Load(); got != int64(d.Attempts) {
				t.Errorf("receiver saw %d requests for %d attempts", got, d.Attempts)
			}
		})
	}
}

// TestSendTrickledBody: the status decides; a body that never ends is
// cut off at the timeout.
func TestSendTrickledBody(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name         string
		head         string
		wantAttempts int
		wantStatus   int
		wantErr      bool
	}{
		{name: "200", head: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", wantAttempts: 1, wantStatus: 200},
		{name: "500", head: "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1000000\r\n\r\n", wantAttempts: 3, wantStatus: 500, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := trickleBodyListener(t, tt.head, 10*time.Millisecond)
			s := NewSender(testOptions(func(o *Options) { o.Timeout = timeout }))
			d, err := s.Send(testContext(t, 10*time.Second), url, []byte("{}"), "k")
			if (err != nil) != tt.wantErr {
				t.Errorf("Send error = %v, want error: %v", err, tt.wantErr)
			}
			if d.Attempts != tt.wantAttempts || d.StatusCode != tt.wantStatus {
				t.Errorf("Delivery = %+v, want %d attempts, status %d", d, tt.wantAttempts, tt.wantStatus)
			}
			if limit := time.Duration(tt.wantAttempts)*timeout + time.Second; d.Duration > limit {
				t.Errorf("Duration = %s, want at most %s", d.Duration, limit)
			}
		})
	}
}

// trickleBodyListener writes head at once and then a body one byte every
// interval, never finishing.
func trickleBodyListener(t *testing.T, head string, interval time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
					return
				}
				if _, err := io.WriteString(conn, head); err != nil {
					return
				}
				for {
					select {
					case <-stop:
						return
					case <-time.After(interval):
					}
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

func TestSendCapsResponseBody(t *testing.T) {
	const size = 10 << 20
	tests := []struct {
		name        string
		maxBodyRead int64
		status      int
		wantRead    int64
	}{
		{name: "default cap", status: 200, wantRead: 64 << 10},
		{name: "small cap", maxBodyRead: 1 << 10, status: 200, wantRead: 1 << 10},
		{name: "error response", maxBodyRead: 1 << 10, status: 400, wantRead: 1 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			srv := startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				chunk := make([]byte, 32<<10)
				for written.Load() < size {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			s := NewSender(testOptions(func(o *Options) { o.MaxBodyRead = tt.maxBodyRead }))
			ct := withCountingTransport(s)

			d, err := s.Send(t.Context(), srv.URL, []byte("{}"), "k")
			if (err != nil) != (tt.status != 200) || d.StatusCode != tt.status {
				t.Fatalf("Send = %+v, %v", d, err)
			}
			if got := ct.bodyRead.Load(); got != tt.wantRead {
				t.Errorf("read %d bytes of a %d-byte response, want %d", got, size, tt.wantRead)
			}
			if got := ct.bodyClosed.Load(); got != 1 {
				t.Errorf("response body closed %d times, want 1", got)
			}
		})
	}
}

func TestSendTLS(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trusted := x509.NewCertPool()
	trusted.AddCert(srv.Certificate())

	tests := []struct {
		name         string
		tlsConfig    *tls.Config
		wantErr      bool
		wantAttempts int
		wantHits     int64
	}{
		{name: "untrusted certificate", wantErr: true, wantAttempts: 1},
		{name: "other roots", tlsConfig: &tls.Config{RootCAs: x509.NewCertPool()}, wantErr: true, wantAttempts: 1},
		{name: "trusted certificate", tlsConfig: &tls.Config{RootCAs: trusted}, wantAttempts: 1, wantHits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			s := NewSender(testOptions(func(o *Options) { o.TLSConfig = tt.tlsConfig }))
			d, err := s.Send(t.Context(), srv.URL, []byte("{}"), "k")
			if tt.wantErr {
				if _, ok := errors.AsType[*tls.CertificateVerificationError](err); !ok {
					t.Errorf("Send error = %v, want a certificate verification error", err)
				}
			} else if err != nil {
				t.Errorf("Send: %v", err)
			}
			if d.Attempts != tt.wantAttempts || hits.Load() != tt.wantHits {
				t.Errorf("Delivery = %+v with %d requests received, want %d attempts, %d requests", d, hits.Load(), tt.wantAttempts, tt.wantHits)
			}
		})
	}
}

func TestSendBackoff(t *testing.T) {
	rc := &testReceiver{statuses: []int{500}}
	srv := startReceiver(t, rc)
	var mu sync.Mutex
	var retries []int
	s := NewSender(testOptions(func(o *Options) {
		o.MaxAttempts = 4
		o.Backoff = func(retry int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			retries = append(retries, retry)
			return 20 * time.Millisecond
		}
	}))
	d, err := s.Send(t.Context(), srv.URL, []byte("{}"), "k")
	if err == nil || d.Attempts != 4 {
		t.Fatalf("Send = %+v, %v; want failure after 4 attempts", d, err)
	}
	if want := []int{1, 2, 3}; !slices.Equal(retries, want) {
		t.Errorf("Backoff called with %v, want %v", retries, want)
	}
	if d.Duration < 60*time.Millisecond {
		t.Errorf("Duration = %s, want at least the 3 backoffs of 20ms", d.Duration)
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	response := func(code int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	tests := []struct {
		name    string
		backoff func(int) time.Duration
		retry   int
		resp    *http.Response
		// budget is what is left of the Send's Retry-After waits; 0 means 30s.
		budget    time.Duration
		want      time.Duration
		wantAsked bool
		wantOK    bool
	}{
		{name: "network error, retry 1", retry: 1, want: time.Second, wantOK: true},
		{name: "network error, retry 2", retry: 2, want: 2 * time.Second, wantOK: true},
		{name: "retry 3 doubles", retry: 3, want: 4 * time.Second, wantOK: true},
		{name: "retry 6 is capped", retry: 6, want: 30 * time.Second, wantOK: true},
		{name: "retry 100 is capped", retry: 100, want: 30 * time.Second, wantOK: true},
		{name: "500 ignores Retry-After", retry: 1, resp: response(500, "20"), want: time.Second, wantOK: true},
		{name: "503 honours Retry-After seconds", retry: 1, resp: response(503, "20"), want: 20 * time.Second, wantAsked: true, wantOK: true},
		{name: "429 honours Retry-After seconds", retry: 2, resp: response(429, "5"), want: 5 * time.Second, wantAsked: true, wantOK: true},
		{name: "Retry-After of the whole budget is waited", retry: 1, resp: response(503, "30"), want: 30 * time.Second, wantAsked: true, wantOK: true},
		{name: "Retry-After below the backoff", retry: 2, resp: response(503, "0"), want: 2 * time.Second, wantOK: true},
		{name: "Retry-After beyond the budget ends the send", retry: 1, resp: response(503, "31"), wantOK: false},
		{name: "Retry-After beyond what is left of the budget ends the send", retry: 1, resp: response(503, "20"), budget: 19 * time.Second, wantOK: false},
		{name: "Retry-After below the backoff needs no budget", retry: 3, resp: response(503, "3"), budget: time.Second, want: 4 * time.Second, wantOK: true},
		{name: "Retry-After of an hour ends the send", retry: 1, resp: response(429, "3600"), wantOK: false},
		{name: "Retry-After of ages ends the send", retry: 1, resp: response(429, "9223372036854775807"), wantOK: false},
		{name: "Retry-After date", retry: 1, resp: response(503, now.Add(10*time.Second).Format(http.TimeFormat)), want: 10 * time.Second, wantAsked: true, wantOK: true},
		{name: "Retry-After date in the past", retry: 1, resp: response(503, now.Add(-time.Hour).Format(http.TimeFormat)), want: time.Second, wantOK: true},
		{name: "Retry-After date tomorrow ends the send", retry: 1, resp: response(503, now.Add(24*time.Hour).Format(http.TimeFormat)), wantOK: false},
		{name: "negative Retry-After is ignored", retry: 1, resp: response(503, "-5"), want: time.Second, wantOK: true},
		{name: "malformed Retry-After is ignored", retry: 1, resp: response(503, "soon"), want: time.Second, wantOK: true},
		{name: "custom backoff replaces the policy", backoff: func(n int) time.Duration { return time.Duration(n) * time.Millisecond }, retry: 2, resp: response(503, "3600"), want: 2 * time.Millisecond, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSender(Options{Backoff: tt.backoff})
			got, asked, ok := s.retryDelay(tt.retry, tt.resp, now, cmp.Or(tt.budget, 30*time.Second))
			if ok != tt.wantOK || (ok && (got != tt.want || asked != tt.wantAsked)) {
				t.Errorf("retryDelay = %s, %v, %v; want %s, %v, %v", got, asked, ok, tt.want, tt.wantAsked, tt.wantOK)
			}
		})
	}
}

func TestSendGivesUpOnLongRetryAfter(t *testing.T) {
	rc := &testReceiver{statuses: []int{503, 200}, header: http.Header{"Retry-After": {"3600"}}}
	srv := startReceiver(t, rc)
	s := NewSender(testOptions(func(o *Options) { o.Backoff = nil }))
	d, err := s.Send(t.Context(), srv.URL, []byte("{}"), "k")
	if err == nil || !strings.Contains(err.Error(), `Retry-After "3600"`) {
		t.Errorf("Send error = %v, want one naming the Retry-After", err)
	}
	if d.Attempts != 1 || d.StatusCode != 503 || d.Duration > time.Second {
		t.Errorf("Delivery = %+v, want 1 quick attempt ending in 503", d)
	}
}

// A receiver's Retry-After never holds a worker past the attempt timeout
// (nsman's --webhook-timeout): 16 receivers answering 503 with
// Retry-After: 30 held 16 workers a minute each (two waits of 30 s); now
// each Send ends at the first answer. A shorter Retry-After is waited as
// long as the waits of one Send add up to no more than the timeout.
func TestRetryAfterHoldsNoWorkerPastTheTimeout(t *testing.T) {
	const timeout = time.Second
	busy := func(retryAfter string) (*httptest.Server, *atomic.Int32) {
		var requests atomic.Int32
		return startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusServiceUnavailable)
		})), &requests
	}
	s := NewSender(testOptions(func(o *Options) { o.Backoff, o.Timeout = nil, timeout }))
	// A sweep that waits as before is cut short here, not after a minute.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 16 {
		srv, requests := busy("30")
		wg.Go(func() {
			d, err := s.Deliver(ctx, Route{Scope: fmt.Sprintf("team-%d", i)}, srv.URL, []byte("{}"), "k")
			if err == nil || d.Attempts != 1 || requests.Load() != 1 || !strings.Contains(err.Error(), `Retry-After "30" exceeds the 1s left of the 1s a delivery may wait for its receiver`) {
				t.Errorf("receiver %d: %+v, %v after %d requests; want one attempt ending on the Retry-After", i, d, err, requests.Load())
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took > timeout {
		t.Errorf("16 receivers answering Retry-After: 30 held the workers %s, want less than the timeout (%s)", took, timeout)
	}

	// With a timeout of 4s, Retry-After: 3 is waited once; the second
	// would take the Send's waits past the timeout.
	srv, requests := busy("3")
	s = NewSender(testOptions(func(o *Options) { o.Backoff, o.Timeout = nil, 4*time.Second }))
	d, err := s.Send(t.Context(), srv.URL, []byte("{}"), "k")
	if err == nil || d.Attempts != 2 || requests.Load() != 2 || d.Duration < 3*time.Second || d.Duration > 4*time.Second {
		t.Errorf("Retry-After: 3 with a timeout of 4s: %+v, %v after %d requests; want 2 attempts 3s apart", d, err, requests.Load())
	}
}

func TestSendContext(t *testing.T) {
	tests := []struct {
		name         string
		ctx          func(t *testing.T) context.Context
		wantErr      error
		wantAttempts int
	}{
		{
			name: "cancelled before the first attempt",
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			wantErr:      context.Canceled,
			wantAttempts: 0,
		},
		{
			name: "deadline during the backoff",
			ctx: func(t *testing.T) context.Context {
				return testContext(t, 300*time.Millisecond)
			},
			wantErr:      context.DeadlineExceeded,
			wantAttempts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &testReceiver{statuses: []int{503}}
			srv := startReceiver(t, rc)
			s := NewSender(testOptions(func(o *Options) {
				o.Backoff = func(int) time.Duration { return 10 * time.Second }
			}))
			d, err := s.Send(tt.ctx(t), srv.URL, []byte("{}"), "k")
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Send error = %v, want %v", err, tt.wantErr)
			}
			if d.Attempts != tt.wantAttempts || len(rc.recorded()) != tt.wantAttempts {
				t.Errorf("Delivery = %+v with %d requests received, want %d attempts", d, len(rc.recorded()), tt.wantAttempts)
			}
			if d.Duration > 5*time.Second {
				t.Errorf("Duration = %s: the backoff was not cut short", d.Duration)
			}
		})
	}
}

func TestSendConcurrent(t *testing.T) {
	const senders = 50
	var mu sync.Mutex
	seen := map[string]int{}
	srv := startReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		seen[key]++
		first := seen[key] == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	s := NewSender(testOptions(func(o *Options) { o.SigningKey = []byte("k") }))

	var wg sync.WaitGroup
	errs := make([]error, senders)
	for i := range senders {
		wg.Go(func() {
			d, err := s.Send(t.Context(), srv.URL, []byte("{}"), fmt.Sprint("key-", i))
			if err == nil && d.Attempts != 2 {
				err = fmt.Errorf("%d attempts, want 2", d.Attempts)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(seen) != senders {
		t.Errorf("receiver saw %d keys, want %d", len(seen), senders)
	}
	for key, n := range seen {
		if n != 2 {
			t.Errorf("key %s sent %d times, want 2", key, n)
		}
	}
}

func TestNewSenderDefaults(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want Sender
	}{
		{
			name: "zero options",
			want: Sender{timeout: 10 * time.Second, maxAttempts: 3, userAgent: "nsman", maxBodyRead: 64 << 10},
		},
		{
			name: "set options",
			o:    Options{Timeout: time.Second, MaxAttempts: 7, UserAgent: "nsman/v1", MaxBodyRead: 10, SigningKey: []byte("k")},
			want: Sender{timeout: time.Second, maxAttempts: 7, userAgent: "nsman/v1", maxBodyRead: 10, signingKey: []byte("k")},
		},
		{
			name: "empty signing key signs nothing",
			o:    Options{SigningKey: []byte{}},
			want: Sender{timeout: 10 * time.Second, maxAttempts: 3, userAgent: "nsman", maxBodyRead: 64 << 10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSender(tt.o)
			got := Sender{timeout: s.timeout, maxAttempts: s.maxAttempts, userAgent: s.userAgent, maxBodyRead: s.maxBodyRead, signingKey: s.signingKey}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewSender = %+v, want %+v", got, tt.want)
			}
			tr := s.client.Transport.(*http.Transport)
			if tr.Proxy != nil {
				t.Error("transport uses a proxy, which would dial around the address policy")
			}
		})
	}
}

func TestNewSenderCopiesSigningKey(t *testing.T) {
	key := []byte("s3cret")
	rc := &testReceiver{statuses: []int{200}}
	srv := startReceiver(t, rc)
	s := NewSender(testOptions(func(o *Options) { o.SigningKey = key }))
	copy(key, "XXXXXX")
	if _, err := s.Send(t.Context(), srv.URL, nil, "k"); err != nil {
		t.Fatal(err)
	}
	if err := VerifySignature(rc.recorded()[0].header, nil, []byte("s3cret"), time.Now(), time.Minute); err != nil {
		t.Errorf("signature after the caller reused its key slice: %v", err)
	}
}
