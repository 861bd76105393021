package sweep

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Webhook defaults and limits. The receiver is chosen by whoever writes a
// NamespaceManager, so every resource it can make nsman spend is bounded.
const (
	defaultWebhookTimeout     = 10 * time.Second
	defaultWebhookMaxAttempts = 3
	defaultWebhookMaxBodyRead = 64 << 10
	// webhookMaxBackoff caps the default exponential backoff.
	webhookMaxBackoff = 30 * time.Second
	// webhookMaxRetryAfter is the longest Retry-After the default backoff
	// waits for. A receiver that asks for more is left to the next sweep
	// rather than holding this one up.
	webhookMaxRetryAfter = 30 * time.Second
	// webhookMaxHeaderBytes bounds the response headers, which the transport
	// would otherwise buffer up to 10 MiB of.
	webhookMaxHeaderBytes = 64 << 10

	webhookTimestampHeader = "X-Nsman-Timestamp"
	webhookSignatureHeader = "X-Nsman-Signature"
	webhookSignaturePrefix = "sha256="
)

// WebhookOptions configure a WebhookSender.
type WebhookOptions struct {
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
	// 1s, 2s, 4s, … capped at 30s, stretched to a Retry-After of at most 30s
	// on 429 and 503; a longer Retry-After ends the Send. A non-nil Backoff
	// replaces all of that, Retry-After included. It must be safe for
	// concurrent use.
	Backoff func(retry int) time.Duration
	// AllowAddress decides whether a resolved IP may be dialled; an error
	// refuses it, and Send does not retry a refusal. Nil means the default
	// policy: refuse link-local unicast and multicast, the unspecified
	// address and cloud metadata endpoints; allow loopback and private
	// ranges, where in-cluster receivers live. It must be safe for concurrent
	// use.
	AllowAddress func(ip netip.Addr) error
	// TLSConfig is the base TLS configuration (for example custom RootCAs in
	// tests); it is cloned. Nil means Go's defaults, with verification on.
	TLSConfig *tls.Config
}

// WebhookSender delivers WEBHOOK actions. It holds a connection pool and is
// safe for concurrent use; create one per sweep and share it.
type WebhookSender struct {
	client      *http.Client
	timeout     time.Duration
	maxAttempts int
	signingKey  []byte
	userAgent   string
	maxBodyRead int64
	backoff     func(retry int) time.Duration // nil: the default policy
}

// NewWebhookSender returns a sender configured by o. Its transport has
// http.DefaultTransport's settings but its own dialer, which checks every
// resolved address against the address policy, so that neither a DNS name nor
// a redirect can reach a refused address. It is built afresh rather than
// cloned, so that whatever a program did to http.DefaultTransport cannot
// route around that dialer, and it ignores proxy environment variables,
// because a proxy would resolve and dial the receiver where the policy cannot
// see it.
func NewWebhookSender(o WebhookOptions) *WebhookSender {
	allow := o.AllowAddress
	if allow == nil {
		allow = allowWebhookAddress
	}
	tr := &http.Transport{
		DialContext:            (&net.Dialer{Control: webhookDialControl(allow)}).DialContext,
		TLSClientConfig:        o.TLSConfig.Clone(),
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: webhookMaxHeaderBytes,
	}

	s := &WebhookSender{
		client: &http.Client{
			Transport: tr,
			// A redirect is reported, not followed: the receiver named in
			// the manifest is the only one nsman talks to.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		timeout:     o.Timeout,
		maxAttempts: o.MaxAttempts,
		userAgent:   o.UserAgent,
		maxBodyRead: o.MaxBodyRead,
		backoff:     o.Backoff,
	}
	if len(o.SigningKey) > 0 {
		s.signingKey = bytes.Clone(o.SigningKey)
	}
	if s.timeout <= 0 {
		s.timeout = defaultWebhookTimeout
	}
	if s.maxAttempts <= 0 {
		s.maxAttempts = defaultWebhookMaxAttempts
	}
	if s.userAgent == "" {
		s.userAgent = "nsman"
	}
	if s.maxBodyRead <= 0 {
		s.maxBodyRead = defaultWebhookMaxBodyRead
	}
	return s
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

// Send POSTs body to rawURL with the given idempotency key, which is the same
// on every attempt so that the receiver can drop duplicates. Success is a 2xx.
// Network errors, 429 and 5xx are retried up to MaxAttempts; anything else,
// an address refusal and an untrusted certificate fail at once.
func (s *WebhookSender) Send(ctx context.Context, rawURL string, body []byte, idempotencyKey string) (Delivery, error) {
	start := time.Now()
	var d Delivery
	done := func(err error) (Delivery, error) {
		d.Duration = time.Since(start)
		return d, err
	}

	u, err := url.Parse(rawURL)
	if err != nil {
		// Not the *url.Error itself: it quotes the URL, password included.
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err
		}
		return done(fmt.Errorf("webhook: invalid url: %w", err))
	}
	target := u.Redacted()
	if err := checkWebhookURL(u); err != nil {
		return done(fmt.Errorf("webhook %s: %w", target, err))
	}
	if idempotencyKey == "" {
		return done(fmt.Errorf("webhook %s: empty idempotency key", target))
	}
	if err := ctx.Err(); err != nil {
		return done(fmt.Errorf("webhook %s: %w", target, err))
	}

	for {
		resp, err := s.attempt(ctx, u, body, idempotencyKey)
		d.Attempts++
		d.StatusCode = 0
		if resp != nil {
			d.StatusCode = resp.StatusCode
			if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
				return done(nil)
			}
			err = &webhookStatusError{status: resp.Status}
		}
		if d.Attempts >= s.maxAttempts || ctx.Err() != nil || !webhookRetryable(resp, err) {
			return done(fmt.Errorf("webhook %s: %w %s", target, err, d.after()))
		}
		wait, ok := s.retryDelay(d.Attempts, resp, time.Now())
		if !ok {
			return done(fmt.Errorf("webhook %s: %w %s; Retry-After %q exceeds %s",
				target, err, d.after(), resp.Header.Get("Retry-After"), webhookMaxRetryAfter))
		}
		if cerr := webhookSleep(ctx, wait); cerr != nil {
			return done(fmt.Errorf("webhook %s: %w %s, last: %w", target, cerr, d.after(), err))
		}
	}
}

// attempt makes one request within the per-attempt timeout. It returns either
// a response, whose body it has already read (at most maxBodyRead bytes) and
// closed, or the error that prevented one.
func (s *WebhookSender) attempt(ctx context.Context, u *url.URL, body []byte, key string) (*http.Response, error) {
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
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set("Idempotency-Key", key)
	if s.signingKey != nil {
		// Signed per attempt, so that a retry after a backoff is not stale.
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set(webhookTimestampHeader, ts)
		req.Header.Set(webhookSignatureHeader, webhookSignature(s.signingKey, ts, body))
	}

	resp, err := s.client.Do(req)
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

// retryDelay returns the pause before retry n, and false when the receiver
// asked for a longer pause than one Send may take.
func (s *WebhookSender) retryDelay(retry int, resp *http.Response, now time.Time) (time.Duration, bool) {
	if s.backoff != nil {
		return s.backoff(retry), true
	}
	d := webhookDefaultBackoff(retry)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			if ra > webhookMaxRetryAfter {
				return 0, false
			}
			d = max(d, ra)
		}
	}
	return d, true
}

// webhookDefaultBackoff doubles from 1s up to webhookMaxBackoff.
func webhookDefaultBackoff(retry int) time.Duration {
	if retry < 1 {
		retry = 1
	}
	if retry > 6 { // 1s<<5 already exceeds the cap; avoid shifting further.
		return webhookMaxBackoff
	}
	return min(time.Second<<(retry-1), webhookMaxBackoff)
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

// webhookSleep waits d unless ctx ends first.
func webhookSleep(ctx context.Context, d time.Duration) error {
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

// webhookRetryable reports whether another attempt may succeed: the receiver
// said so (429, 5xx), or the network failed in a way that may pass. A refused
// address and an untrusted certificate fail the same way every time.
func webhookRetryable(resp *http.Response, err error) bool {
	if resp != nil {
		return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 && resp.StatusCode <= 599
	}
	if _, ok := errors.AsType[*webhookRefusedError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return false
	}
	return true
}

// webhookStatusError is a response other than a 2xx. Its message is the
// status line, e.g. "500 Internal Server Error".
type webhookStatusError struct{ status string }

func (e *webhookStatusError) Error() string { return e.status }

// webhookRefusedError is a dial that the address policy stopped before any
// packet was sent.
type webhookRefusedError struct {
	address string
	err     error
}

func (e *webhookRefusedError) Error() string {
	return "address " + e.address + " refused: " + e.err.Error()
}

func (e *webhookRefusedError) Unwrap() error { return e.err }

// checkWebhookURL accepts only absolute http and https URLs with a host:
// another scheme would let a manifest make nsman read files or speak other
// protocols.
func checkWebhookURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	return nil
}

// webhookDialControl runs allow on the address the dialer is about to
// connect to: after DNS resolution and on every hop, which is where a
// check cannot be bypassed by a name or a redirect.
func webhookDialControl(allow func(netip.Addr) error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &webhookRefusedError{address: address, err: err}
		}
		ip := ap.Addr().Unmap().WithZone("")
		if err := allow(ip); err != nil {
			return &webhookRefusedError{address: ip.String(), err: err}
		}
		return nil
	}
}

// allowWebhookAddress is the default address policy. In-cluster Services
// (private ranges, ULAs, loopback for a sidecar) are the normal receivers, so
// it refuses only what no webhook has a reason to reach and what would hand a
// manifest author the node's credentials: link-local addresses (where cloud
// metadata and node agents listen), the unspecified address (which Linux
// dials as loopback) and the metadata endpoints outside link-local space.
func allowWebhookAddress(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	// An IPv4 address behind the well-known NAT64 prefix (RFC 6052) is the
	// same host; judge it as IPv4.
	if b := ip.As16(); ip.Is6() && [12]byte(b[:12]) == [12]byte{0x00, 0x64, 0xff, 0x9b} {
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case !ip.IsValid():
		return errors.New("invalid address")
	case ip.IsUnspecified():
		return errors.New("unspecified address")
	case isCloudMetadataAddress(ip):
		return errors.New("cloud metadata address")
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return errors.New("link-local address")
	}
	return nil
}

// isCloudMetadataAddress reports the instance-metadata endpoints of the major
// clouds.
func isCloudMetadataAddress(ip netip.Addr) bool {
	switch ip.String() {
	case "169.254.169.254", // AWS, GCP, Azure, OpenStack and others
		"fd00:ec2::254",   // AWS over IPv6
		"100.100.100.200": // Alibaba Cloud
		return true
	}
	return false
}

// webhookSignature is the X-Nsman-Signature value: HMAC-SHA256 over the
// timestamp, a dot and the body, so that neither can be replaced alone.
func webhookSignature(key []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(timestamp))
	mac.Write([]byte("."))
	mac.Write(body)
	return webhookSignaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature is what a receiver does with a signed request: it checks
// that the X-Nsman-Signature header is the HMAC-SHA256 of X-Nsman-Timestamp,
// a dot and body under key, and that the timestamp is within maxAge of now
// (either way, to bound both replays and clock skew).
func VerifySignature(header http.Header, body, key []byte, now time.Time, maxAge time.Duration) error {
	if len(key) == 0 {
		return errors.New("verify webhook signature: empty key")
	}
	if maxAge <= 0 {
		return fmt.Errorf("verify webhook signature: maxAge %s is not positive", maxAge)
	}
	ts, sig := header.Get(webhookTimestampHeader), header.Get(webhookSignatureHeader)
	if ts == "" || sig == "" {
		return fmt.Errorf("verify webhook signature: missing %s or %s header", webhookTimestampHeader, webhookSignatureHeader)
	}
	if !strings.HasPrefix(sig, webhookSignaturePrefix) ||
		!hmac.Equal([]byte(sig), []byte(webhookSignature(key, ts, body))) {
		return errors.New("verify webhook signature: signature does not match")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("verify webhook signature: timestamp: %w", err)
	}
	if age := now.Sub(time.Unix(secs, 0)); age > maxAge || age < -maxAge {
		return fmt.Errorf("verify webhook signature: timestamp %s is %s away from %s, more than %s",
			ts, age.Abs().Truncate(time.Second), now.UTC().Format(time.RFC3339), maxAge)
	}
	return nil
}

// WebhookBody builds the JSON body the original Java operator posted, field
// for field, so that its receivers keep working:
//
//	{"namespaceManager":{"namespace":..,"name":..},"policy":{..},"namespace":..}
//
// policy is the policy object as stored in the manifest; target is the
// namespace the action is about.
func WebhookBody(managerNamespace, managerName string, policy map[string]any, target string) ([]byte, error) {
	type managerRef struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	payload := struct {
		NamespaceManager managerRef     `json:"namespaceManager"`
		Policy           map[string]any `json:"policy"`
		Namespace        string         `json:"namespace"`
	}{managerRef{managerNamespace, managerName}, policy, target}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Policies carry URLs with '&'; send them as written, as the Java
	// operator did, rather than as \u0026.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
