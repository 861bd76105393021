package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults and limits. The receiver is chosen by whoever writes a
// NamespaceManager, so every resource it can make nsman spend is bounded.
const (
	defaultTimeout     = 10 * time.Second
	defaultMaxAttempts = 3
	defaultMaxBodyRead = 64 << 10
	// defaultWorkers is nsman's default --concurrency.
	defaultWorkers = 16
	// maxBackoff caps the default exponential backoff.
	maxBackoff = 30 * time.Second
	// maxHeaderBytes bounds the response headers, which the transport would
	// otherwise buffer up to 10 MiB of.
	maxHeaderBytes = 64 << 10
)

// Options configure a Sender.
type Options struct {
	// Timeout bounds one attempt, from dialling to the end of the body read,
	// so that a receiver that hangs or trickles bytes cannot stall a sweep.
	// 0 means 10s.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one Send, the first included.
	// 0 means 3.
	MaxAttempts int
	// SigningKey, when set, signs every request so that receivers can tell
	// nsman's calls from anyone else's. Nil or empty: no signature headers.
	SigningKey []byte
	// UserAgent identifies nsman and its version to receivers, e.g.
	// "nsman/v1.2.3". Empty means "nsman".
	UserAgent string
	// MaxBodyRead caps how much of a response body is read (only to let the
	// connection be reused; the body is never used). 0 means 64 KiB.
	MaxBodyRead int64
	// Backoff is the pause before retry n (1-based). Nil means the default:
	// 1s, 2s, 4s, … capped at 30s, stretched to a receiver's Retry-After on
	// 429 and 503 as long as the Retry-After waits of one Send add up to
	// no more than Timeout; a Retry-After beyond that ends the Send (a
	// receiver's answer never holds a worker longer than an attempt may).
	// A non-nil Backoff replaces all of that, Retry-After included. It
	// must be safe for concurrent use.
	Backoff func(retry int) time.Duration
	// AllowAddress decides whether a resolved IP may be dialled; an error
	// refuses it, and Send does not retry a refusal. Nil means the deny
	// list: refuse link-local unicast and multicast, the unspecified address
	// and cloud platform endpoints (metadata, Azure's WireServer); allow
	// loopback and private ranges, where in-cluster receivers live. It must
	// be safe for concurrent use.
	AllowAddress func(ip netip.Addr) error
	// Allow, when it names anything, is the only set of receivers dialled
	// (nsman's --webhook-allow); AllowAddress applies as well. Nil allows
	// every receiver AllowAddress allows.
	Allow *AllowList
	// TLSConfig is the base TLS configuration (for example custom RootCAs in
	// tests); it is cloned. Nil means Go's defaults, with verification on.
	TLSConfig *tls.Config
	// Workers is how many tenants' deliveries run at once (nsman's
	// --concurrency): in a Sender's life (a sweep), those that end silent
	// may take 2 × Timeout × Workers before every later one is deferred
	// (see silence). 0 means 16.
	Workers int
}

// Sender delivers WEBHOOK actions. It holds a connection pool and is safe for
// concurrent use; create one per sweep and share it.
type Sender struct {
	// client dials receivers the platform team chose; tenant, those chosen
	// in a tenant's namespace (see Route). Their connection pools are
	// apart, so that a tenant's request never reuses a connection that was
	// dialled under the platform's rule.
	client, tenant *http.Client
	timeout        time.Duration
	maxAttempts    int
	signingKey     []byte
	userAgent      string
	maxBodyRead    int64
	backoff        func(retry int) time.Duration // nil: the default policy
	allow          *AllowList
	// silence holds the receivers (scheme, host, port) an attempt timed
	// out on, or a delivery failed slowly on: a later Send to one (a
	// tenant's for any tenant, the platform's for the platform), of a
	// tenant's scope that has spent its silent receivers, or of any tenant
	// once their silent receivers took the sweep's time for them, is
	// deferred at once. Copies share it.
	silence *silence
}

// NewSender returns a sender configured by o. Its transport has
// http.DefaultTransport's settings but its own dialer, which checks every
// resolved address against the address policy, so that neither a DNS name nor
// a redirect can reach a refused address. It is built afresh rather than
// cloned, so that whatever a program did to http.DefaultTransport cannot
// route around that dialer, and it ignores proxy environment variables,
// because a proxy would resolve and dial the receiver where the policy cannot
// see it.
func NewSender(o Options) *Sender {
	deny := o.AllowAddress
	if deny == nil {
		deny = checkDenyList
	}
	allow := o.Allow
	timeout := cmp.Or(max(o.Timeout, 0), defaultTimeout)
	workers := cmp.Or(max(o.Workers, 0), defaultWorkers)
	s := &Sender{
		silence:     newSilence(2 * timeout * time.Duration(workers)),
		client:      newClient(platformDialer(allow, deny), o.TLSConfig, max(o.Timeout, 0)),
		tenant:      newClient(tenantDialer(allow, deny), o.TLSConfig, max(o.Timeout, 0)),
		timeout:     o.Timeout,
		maxAttempts: o.MaxAttempts,
		userAgent:   o.UserAgent,
		maxBodyRead: o.MaxBodyRead,
		backoff:     o.Backoff,
		allow:       allow,
	}
	if len(o.SigningKey) > 0 {
		s.signingKey = bytes.Clone(o.SigningKey)
	}
	if s.timeout <= 0 {
		s.timeout = defaultTimeout
	}
	if s.maxAttempts <= 0 {
		s.maxAttempts = defaultMaxAttempts
	}
	if s.userAgent == "" {
		s.userAgent = "nsman"
	}
	if s.maxBodyRead <= 0 {
		s.maxBodyRead = defaultMaxBodyRead
	}
	return s
}

// platformDialer dials the receivers the platform team chose, at what the
// URL's host resolves to, each address checked by the allow list and deny.
// The transport dials the URL's host and port; the check on the addresses
// it resolves to depends on that host.
func platformDialer(allow *AllowList, deny func(netip.Addr) error) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := urlHostPort(ctx, address)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{Control: dialControl(allow.addressCheck(host, deny))}
		return d.DialContext(ctx, network, address)
	}
}

// tenantDialer dials the receivers chosen in a tenant's namespace: at the
// endpoints the request's Route names, each checked by deny alone (the
// tenant's Pods are the tenant's), or else at what the URL's host resolves
// to, each address checked by the allow list's rule for tenants.
func tenantDialer(allow *AllowList, deny func(netip.Addr) error) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := urlHostPort(ctx, address)
		if err != nil {
			return nil, err
		}
		if r := routeOf(ctx); len(r.Endpoints) > 0 {
			return dialEndpoints(ctx, network, r.Endpoints, deny)
		}
		d := net.Dialer{Control: dialControl(allow.tenantCheck(host, deny))}
		return d.DialContext(ctx, network, net.JoinHostPort(host, port))
	}
}

// urlHostPort splits the address the transport dials into its host and
// port, refusing a host that is not the one the request's URL names, as it
// was judged: the transport dials, and keys its pool on, a form of the host
// of its own (see CheckHost), which must be the same.
func urlHostPort(ctx context.Context, address string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(address)
	if err != nil {
		return "", "", &refusedError{address: address, err: err}
	}
	if want, ok := ctx.Value(urlHostKey{}).(string); !ok || host != want {
		return "", "", &refusedError{address: host, err: errors.New("not the host the URL names")}
	}
	return host, port, nil
}

// dialEndpoints dials endpoints in turn, each checked by deny, and returns
// the first connection made, or the last error.
func dialEndpoints(ctx context.Context, network string, endpoints []netip.AddrPort, deny func(netip.Addr) error) (net.Conn, error) {
	var last error
	for _, ep := range endpoints {
		d := net.Dialer{Control: dialControl(deny)}
		c, err := d.DialContext(ctx, network, ep.String())
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

type urlHostKey struct{}

// newClient is an HTTP client that dials with dial and follows no redirect:
// the receiver named in the manifest is the only one nsman talks to.
func newClient(dial func(ctx context.Context, network, address string) (net.Conn, error), tlsConfig *tls.Config, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:       dial,
			TLSClientConfig:   tlsConfig.Clone(),
			ForceAttemptHTTP2: true,
			MaxIdleConns:      100,
			IdleConnTimeout:   90 * time.Second,
			// A handshake that stalls is an attempt that timed out.
			TLSHandshakeTimeout:    cmp.Or(timeout, defaultTimeout),
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: maxHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// WithSigningKey returns a Sender like s, sharing its connections, that
// signs with key instead (none when key is empty): notifications are signed
// with a key of their own, which no tenant's receiver ever sees used.
func (s *Sender) WithSigningKey(key []byte) *Sender {
	c := *s
	c.signingKey = nil
	if len(key) > 0 {
		c.signingKey = bytes.Clone(key)
	}
	return &c
}

// Delivery is what one Send did.
type Delivery struct {
	// Attempts is the number of requests tried; 0 when Send refused the call
	// before any network I/O.
	Attempts int
	// StatusCode is the HTTP status of the last attempt, 0 if it got none.
	StatusCode int
	// Duration is the time Send took, backoff included.
	Duration time.Duration
}

// after says how many attempts an error message is about.
func (d Delivery) after() string {
	if d.Attempts == 1 {
		return "after 1 attempt"
	}
	return fmt.Sprintf("after %d attempts", d.Attempts)
}

// Send POSTs body to rawURL, a receiver the platform team chose, with the
// given idempotency key: Deliver with the zero Route.
func (s *Sender) Send(ctx context.Context, rawURL string, body []byte, idempotencyKey string) (Delivery, error) {
	return s.Deliver(ctx, Route{}, rawURL, body, idempotencyKey)
}

// Deliver POSTs body to rawURL, reached as route says, with the given
// idempotency key, which is the same on every attempt so that the receiver
// can drop duplicates. Success is a 2xx. Network errors, 429 and 5xx are
// retried up to MaxAttempts; anything else, an address refusal and an
// untrusted certificate fail at once. A host the allow list refuses
// whatever it resolves to is refused before any network I/O. Its errors
// name the receiver by scheme and host only: a URL's path and query may be
// a credential (a Slack incoming webhook's is).
func (s *Sender) Deliver(ctx context.Context, route Route, rawURL string, body []byte, idempotencyKey string) (Delivery, error) {
	start := time.Now()
	var d Delivery
	done := func(err error) (Delivery, error) {
		d.Duration = time.Since(start)
		return d, err
	}
	u, toPods, err := s.admit(ctx, route, rawURL, idempotencyKey)
	if err != nil {
		return done(err)
	}
	target, receiver := Origin(u), receiverKey(u)
	// silent: an attempt got no answer in time.
	silent := false
	// gaveUp ends a failed delivery. One whose attempt timed out, or that
	// held its worker for an attempt's timeout or longer (slow answers,
	// Retry-After waits, the action's deadline), ended silent: the
	// receiver is deferred for the rest of the sweep, and a tenant's
	// counts against its scope and the tenants' time. An interrupted
	// sweep's does not.
	gaveUp := func(err error) (Delivery, error) {
		if took := time.Since(start); (silent || took >= s.timeout) && !errors.Is(ctx.Err(), context.Canceled) {
			s.silence.end(route.Scope, receiver, took)
		}
		return done(err)
	}
	ctx = context.WithValue(ctx, urlHostKey{}, u.Hostname())

	// waited is how long this Send paused for Retry-After so far: at most
	// s.timeout in all.
	var waited time.Duration
	for {
		if d.Attempts > 0 && route.Recheck != nil {
			endpoints, err := recheckEndpoints(ctx, route)
			if err != nil {
				return done(fmt.Errorf("webhook %s: %w", target, err))
			}
			route.Endpoints = endpoints
		}
		resp, err := s.routedAttempt(ctx, route, u, body, idempotencyKey, toPods)
		silent = silent || resp == nil && timedOut(err) && ctx.Err() == nil
		d.Attempts++
		d.StatusCode = 0
		if resp != nil {
			d.StatusCode = resp.StatusCode
			if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
				return done(nil)
			}
			err = &statusError{code: resp.StatusCode}
		}
		paused, stop := s.awaitRetry(ctx, route.Scope, receiver, target, d, resp, err, s.timeout-waited)
		if stop != nil {
			return gaveUp(stop)
		}
		waited += paused
	}
}

// admit refuses, before any network I/O, a delivery that could not be
// made or may not be: an invalid URL, a host the allow list refuses
// whatever it resolves to (unless the receiver is a tenant's own Pods,
// which the allow list does not judge), a tenant's Pods without an
// endpoint, an empty idempotency key, a context already done and a
// receiver silent in route's scope. It returns the URL parsed, and
// whether the receiver is a tenant's own Pods, dialled at the endpoints
// route names (checked again before every attempt).
func (s *Sender) admit(ctx context.Context, route Route, rawURL, idempotencyKey string) (*url.URL, bool, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Not the *url.Error itself: it quotes the URL, password included.
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err
		}
		return nil, false, fmt.Errorf("webhook: %w", &invalidURLError{err: err})
	}
	target := Origin(u)
	if err := checkURL(u); err != nil {
		return nil, false, fmt.Errorf("webhook %s: %w", target, &invalidURLError{err: err})
	}
	toPods := route.Tenant && (len(route.Endpoints) > 0 || route.Recheck != nil)
	if toPods && len(route.Endpoints) == 0 {
		return nil, false, fmt.Errorf("webhook %s: %w", target, &recheckError{err: errNoEndpoint})
	}
	if !toPods {
		if err := s.allow.check(u.Hostname()); err != nil {
			return nil, false, fmt.Errorf("webhook %s: %w", target, err)
		}
	}
	if idempotencyKey == "" {
		return nil, false, fmt.Errorf("webhook %s: empty idempotency key", target)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("webhook %s: %w", target, err)
	}
	if err := s.silence.deferral(route.Scope, receiverKey(u)); err != nil {
		return nil, false, fmt.Errorf("webhook %s: %w", target, err)
	}
	return u, toPods, nil
}

// routedAttempt makes one attempt of a delivery on route (a tenant's
// through the tenant's pool, with route, its endpoints as last read, in
// the context tenantDialer reads it from), and marks the receiver silent
// in route's scope when the attempt got no answer in time.
func (s *Sender) routedAttempt(ctx context.Context, route Route, u *url.URL, body []byte, key string, fresh bool) (*http.Response, error) {
	client, actx := s.client, ctx
	if route.Tenant {
		client, actx = s.tenant, context.WithValue(ctx, routeKey{}, route)
	}
	resp, err := s.attempt(actx, client, u, body, key, fresh)
	if resp == nil && timedOut(err) && ctx.Err() == nil {
		// Every other delivery to this receiver, in this sweep, would
		// wait as long: each is deferred instead, and this one, if a
		// tenant's, tries it no more.
		s.silence.mark(route.Scope, receiverKey(u))
	}
	return resp, err
}

// recheckEndpoints reads route's endpoints again before a retry: the Pods
// they were chosen from may have changed since the last attempt, and none
// left ends the delivery as an error of Recheck's does.
func recheckEndpoints(ctx context.Context, route Route) ([]netip.AddrPort, error) {
	endpoints, err := route.Recheck(ctx)
	if err == nil && len(endpoints) == 0 {
		err = errNoEndpoint
	}
	if err != nil {
		return nil, &recheckError{err: err}
	}
	return endpoints, nil
}

// awaitRetry pauses before the next attempt of a delivery to receiver
// (named target) whose last attempt failed with resp and err, and returns
// how much of the pause was the receiver's Retry-After, which budget
// bounds (what is left of s.timeout for such waits). It returns instead
// the error the delivery gives up with: its attempts spent, ctx done, a
// failure that would fail again, a Retry-After beyond budget, or, for a
// tenant's, a Send to receiver in scope deferred now, before the pause or
// after it (see silence.stops).
func (s *Sender) awaitRetry(ctx context.Context, scope, receiver, target string, d Delivery, resp *http.Response, err error, budget time.Duration) (time.Duration, error) {
	if d.Attempts >= s.maxAttempts || ctx.Err() != nil || !retryable(resp, err) || s.silence.stops(scope, receiver) {
		return 0, fmt.Errorf("webhook %s: %w %s", target, err, d.after())
	}
	wait, asked, ok := s.retryDelay(d.Attempts, resp, time.Now(), budget)
	if !ok {
		return 0, fmt.Errorf("webhook %s: %w %s; Retry-After %q exceeds the %s left of the %s a delivery may wait for its receiver",
			target, err, d.after(), resp.Header.Get("Retry-After"), budget, s.timeout)
	}
	if cerr := sleep(ctx, wait); cerr != nil {
		return 0, fmt.Errorf("webhook %s: %w %s, last: %w", target, cerr, d.after(), err)
	}
	if s.silence.stops(scope, receiver) {
		// The receiver, or the tenant's other receivers, timed out
		// meanwhile, or the tenants' time for silent receivers ran out.
		return 0, fmt.Errorf("webhook %s: %w %s", target, err, d.after())
	}
	if !asked {
		return 0, nil
	}
	return wait, nil
}

// attempt makes one request within the per-attempt timeout. It returns either
// a response, whose body it has already read (at most maxBodyRead bytes) and
// closed, or the error that prevented one.
func (s *Sender) attempt(ctx context.Context, client *http.Client, u *url.URL, body []byte, key string, fresh bool) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// A body without GetBody keeps http.Transport from replaying the request
	// by itself, which it does for a POST with an Idempotency-Key when a
	// reused connection drops: every request on the wire is a counted
	// attempt. (An empty body stays nil, to be sent as Content-Length: 0
	// rather than chunked; the transport may replay that one.)
	if len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	// A fresh connection, closed after the request: one pooled under the
	// URL's host would be reused for endpoints no longer checked.
	req.Close = fresh
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set(IdempotencyKeyHeader, key)
	if s.signingKey != nil {
		// Signed per attempt, so that a retry after a backoff is not stale.
		sign(req, s.signingKey, body, time.Now())
	}

	resp, err := client.Do(req)
	if err != nil {
		// The *url.Error repeats the method and URL that Send's message
		// already names.
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("no response within %s: %w", s.timeout, err)
		}
		return nil, err
	}
	// The status is the answer; the body is read only so that the connection
	// can be reused, and never beyond the cap nor past the timeout.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, s.maxBodyRead))
	_ = resp.Body.Close()
	return resp, nil
}

// retryDelay returns the pause before retry n, whether the receiver's
// Retry-After set it, and false when the receiver asked for a longer pause
// than budget, what is left of the Retry-After waits one Send may take.
func (s *Sender) retryDelay(retry int, resp *http.Response, now time.Time, budget time.Duration) (time.Duration, bool, bool) {
	if s.backoff != nil {
		return s.backoff(retry), false, true
	}
	d := defaultBackoff(retry)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok && ra > d {
			if ra > budget {
				return 0, true, false
			}
			return ra, true, true
		}
	}
	return d, false, true
}

// defaultBackoff doubles from 1s up to maxBackoff.
func defaultBackoff(retry int) time.Duration {
	if retry < 1 {
		retry = 1
	}
	if retry > 6 { // 1s<<5 already exceeds the cap; avoid shifting further.
		return maxBackoff
	}
	return min(time.Second<<(retry-1), maxBackoff)
}

// parseRetryAfter reads a Retry-After value, delay-seconds or HTTP-date
// (RFC 9110, section 10.2.3). A malformed value is ignored.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, 1<<31)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable reports whether another attempt may succeed: the receiver said
// so (429, 5xx), or the network failed in a way that may pass. A refused
// address and an untrusted certificate fail the same way every time.
func retryable(resp *http.Response, err error) bool {
	if resp != nil {
		return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 && resp.StatusCode <= 599
	}
	if _, ok := errors.AsType[*refusedError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return false
	}
	return true
}

// statusError is a response other than a 2xx. Its message is "HTTP" and
// the code, never the reason phrase, which is whatever the receiver chose
// to write (markup for the Slack channel a notification reaches, say).
type statusError struct{ code int }

func (e *statusError) Error() string { return "HTTP " + strconv.Itoa(e.code) }

// Silent returns the error a Send to rawURL in scope (see Route.Scope)
// would be deferred with now, or nil, without sending anything.
func (s *Sender) Silent(scope, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	return s.silence.deferral(scope, receiverKey(u))
}

// receiverKey names a receiver by scheme, host and port (its scheme's
// default when the URL has none).
func receiverKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// invalidURLError is a URL Send refuses before any network I/O.
type invalidURLError struct{ err error }

func (e *invalidURLError) Error() string { return "invalid url: " + e.err.Error() }

func (e *invalidURLError) Unwrap() error { return e.err }

// Origin is how nsman names a receiver in what it writes and logs: the
// URL's scheme and host (with its port), never its user, path or query.
func Origin(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}

// checkURL accepts only absolute http and https URLs with a host in ASCII
// form: another scheme would let a manifest make nsman read files or speak
// other protocols, and another host form would be judged as written but
// dialled, and pooled, as its ASCII form (see CheckHost).
func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	return CheckHost(u.Hostname())
}

// CheckHost refuses a URL's host that is not in the form it is dialled
// in: any byte beyond ASCII. net/http makes such a host ASCII (IDNA) to
// dial it and to key its connection pool, mapping full-width letters, other
// scripts' look-alikes and ignored characters onto other names
// (hook.a.ｓｖｃ becomes hook.a.svc), while whoever judges the URL (a
// tenant's route, the allow list) would judge the host as written. An
// internationalized name is written in its ASCII form (xn--…).
func CheckHost(host string) error {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return fmt.Errorf("host %q is not in ASCII form: write an internationalized name as its xn-- form", host)
		}
	}
	return nil
}
