package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The headers a receiver reads. The signature headers are set only when the
// Sender has a signing key.
const (
	// IdempotencyKeyHeader is the same on every attempt and every sweep that
	// delivers one firing, so that a receiver can drop duplicates.
	IdempotencyKeyHeader = "Idempotency-Key"
	// TimestampHeader holds the Unix seconds at which the attempt was signed.
	// Both signature versions cover it.
	TimestampHeader = "X-Nsman-Timestamp"
	// SignatureHeader holds signature version 1: "sha256=" and the
	// lower-case hex HMAC-SHA256 of the timestamp, a dot and the body. It
	// names no receiver, so receivers should verify SignatureV2Header
	// instead; it is sent beside it, unchanged, in every 1.x release so that
	// existing receivers keep working, and no longer from 2.0.
	SignatureHeader = "X-Nsman-Signature"
	// SignatureV2Header holds signature version 2: "v2=" and the lower-case
	// hex HMAC-SHA256 of a string that names the method, the URL nsman
	// called, the timestamp, the Idempotency-Key and the body's SHA-256 (see
	// VerifySignatureV2), so that a request signed for one receiver fails at
	// any other.
	SignatureV2Header = "X-Nsman-Signature-V2"

	signaturePrefix   = "sha256="
	signatureV2Prefix = "v2="
)

// signature is the SignatureHeader value: HMAC-SHA256 over the timestamp, a
// dot and the body, so that neither can be replaced alone.
func signature(key []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(timestamp))
	mac.Write([]byte("."))
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature is what a receiver did with a signed request before
// signature version 2: it checks that the X-Nsman-Signature header is the
// HMAC-SHA256 of X-Nsman-Timestamp, a dot and body under key, and that the
// timestamp is within maxAge of now (either way, to bound both replays and
// clock skew).
//
// Deprecated: version 1 does not name the receiver, and one key signs the
// requests to every receiver, so a receiver that accepts it accepts a request
// nsman signed for another receiver, replayed to it within maxAge. Use
// VerifyRequest or VerifySignatureV2. nsman sends version 1 beside version 2
// in every 1.x release; 2.0 stops sending it and removes this function.
func VerifySignature(header http.Header, body, key []byte, now time.Time, maxAge time.Duration) error {
	const prefix = "verify webhook signature"
	if len(key) == 0 {
		return errors.New(prefix + ": empty key")
	}
	if maxAge <= 0 {
		return fmt.Errorf("%s: maxAge %s is not positive", prefix, maxAge)
	}
	ts, sig := header.Get(TimestampHeader), header.Get(SignatureHeader)
	if ts == "" || sig == "" {
		return fmt.Errorf("%s: missing %s or %s header", prefix, TimestampHeader, SignatureHeader)
	}
	if !strings.HasPrefix(sig, signaturePrefix) ||
		!hmac.Equal([]byte(sig), []byte(signature(key, ts, body))) {
		return errors.New(prefix + ": signature does not match")
	}
	return checkTimestamp(prefix, ts, now, maxAge)
}

// VerifyRequest is what a receiver does with a signed request r, whose body
// it has read into body: it checks r's X-Nsman-Signature-V2 as
// VerifySignatureV2 does, for r's method and externalURL.
//
// externalURL is the URL nsman was configured to call (the manager's
// params.url, or --notify-url), stated by the receiver, never taken from r:
// behind a proxy, an Ingress or a Service the request names another host,
// and a request replayed by another receiver names whatever host and path
// suit it, so a URL rebuilt from r would accept the very replays version 2
// exists to refuse.
func VerifyRequest(r *http.Request, externalURL string, body, key []byte, now time.Time, maxAge time.Duration) error {
	if externalURL == "" {
		return errors.New("verify webhook signature v2: no URL: state the URL nsman was configured to call")
	}
	return VerifySignatureV2(r.Method, externalURL, r.Header, body, key, now, maxAge)
}

// VerifySignatureV2 checks that header's X-Nsman-Signature-V2 is "v2=" and
// the lower-case hex HMAC-SHA256 under key of
//
//	"v2" LF method LF url LF timestamp LF idempotency-key LF hex(SHA-256(body))
//
// (LF a newline, none after the last field): method as given; url, the URL
// nsman was configured to call, in its canonical form (see canonicalURL);
// timestamp and idempotency-key, the X-Nsman-Timestamp and Idempotency-Key
// headers as received; the body's SHA-256 in lower-case hex. It then checks
// that the timestamp is within maxAge of now, either way. No field may hold
// a control character, a newline included, so that the string is read back
// one way only: a request with such a header is refused (HTTP cannot carry
// CR or LF in a header, and url.Parse refuses control characters).
//
// The URL is what stops a request signed for one receiver from verifying at
// another; see VerifyRequest for where it must come from.
func VerifySignatureV2(method, rawURL string, header http.Header, body, key []byte, now time.Time, maxAge time.Duration) error {
	const prefix = "verify webhook signature v2"
	if len(key) == 0 {
		return errors.New(prefix + ": empty key")
	}
	if maxAge <= 0 {
		return fmt.Errorf("%s: maxAge %s is not positive", prefix, maxAge)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// Not the *url.Error itself: it quotes the URL, password included.
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err
		}
		return fmt.Errorf("%s: url: %w", prefix, err)
	}
	canonical, err := canonicalURL(u)
	if err != nil {
		return fmt.Errorf("%s: url: %w", prefix, err)
	}
	ts, idempotencyKey, sig := header.Get(TimestampHeader), header.Get(IdempotencyKeyHeader), header.Get(SignatureV2Header)
	if ts == "" || idempotencyKey == "" || sig == "" {
		return fmt.Errorf("%s: missing %s, %s or %s header", prefix, TimestampHeader, IdempotencyKeyHeader, SignatureV2Header)
	}
	want, err := signatureV2(key, method, canonical, ts, idempotencyKey, body)
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	if !hmac.Equal([]byte(sig), []byte(want)) {
		// Most often a URL other than the one nsman called: say so, without
		// quoting it (its query may hold a token).
		return errors.New(prefix + ": signature does not match (signed for another URL or method, or a header, the body or the key differs)")
	}
	return checkTimestamp(prefix, ts, now, maxAge)
}

// checkTimestamp refuses a timestamp more than maxAge from now, either way.
func checkTimestamp(prefix, ts string, now time.Time, maxAge time.Duration) error {
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: timestamp: %w", prefix, err)
	}
	if age := now.Sub(time.Unix(secs, 0)); age > maxAge || age < -maxAge {
		return fmt.Errorf("%s: timestamp %s is %s away from %s, more than %s",
			prefix, ts, age.Abs().Truncate(time.Second), now.UTC().Format(time.RFC3339), maxAge)
	}
	return nil
}

// defaultPorts are the port suffixes a canonical URL drops.
var defaultPorts = map[string]string{"http": ":80", "https": ":443"}

// canonicalURL is the URL as signature version 2 names it: one string for
// every spelling of the URL that reaches the same receiver the same way, so
// that the receiver can state it as it was configured. The scheme and host
// are lower-cased; the userinfo (sent as an Authorization header, not in the
// request line) and the fragment (never sent) are dropped, and so is the
// port when it is the scheme's default (":80" for http, ":443" for https);
// the path is the escaped path as on the request line, "/" when empty; the
// query is kept as written, with its "?" only when it is not empty.
// E.g. "HTTPS://user:pw@Hooks.Example.com:443?a=1#x" is
// "https://hooks.example.com/?a=1".
func canonicalURL(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	suffix, ok := defaultPorts[scheme]
	if !ok {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return "", errors.New("not an absolute URL with a host")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Host), suffix)
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	s := scheme + "://" + host + path
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s, nil
}

// signatureV2 is the SignatureV2Header value for the given fields, or an
// error when one of them would make the signed string ambiguous.
//
// It shares the key with version 1 without sharing signed strings: nsman's
// version 1 strings begin with the timestamp's digits, these with "v2\n";
// and a version 1 verifier would take a version 2 signature only with a
// timestamp header holding newlines, which HTTP cannot carry and which is no
// number.
func signatureV2(key []byte, method, canonicalURL, timestamp, idempotencyKey string, body []byte) (string, error) {
	for _, f := range []struct{ name, value string }{
		{"method", method},
		{"url", canonicalURL},
		{TimestampHeader, timestamp},
		{IdempotencyKeyHeader, idempotencyKey},
	} {
		if f.value == "" {
			return "", fmt.Errorf("empty %s", f.name)
		}
		if strings.ContainsFunc(f.value, isControl) {
			return "", fmt.Errorf("%s holds a control character", f.name)
		}
	}
	if strings.ContainsFunc(method, func(r rune) bool { return r == ' ' }) {
		return "", errors.New("method holds a space")
	}
	if strings.ContainsFunc(timestamp, func(r rune) bool { return r < '0' || r > '9' }) {
		return "", fmt.Errorf("%s %q is not decimal Unix seconds", TimestampHeader, timestamp)
	}
	digest := sha256.Sum256(body)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signingStringV2(method, canonicalURL, timestamp, idempotencyKey, hex.EncodeToString(digest[:]))))
	return signatureV2Prefix + hex.EncodeToString(mac.Sum(nil)), nil
}

// signingStringV2 is the string signature version 2 signs, its fields
// already checked.
func signingStringV2(method, canonicalURL, timestamp, idempotencyKey, bodySHA256 string) string {
	return strings.Join([]string{"v2", method, canonicalURL, timestamp, idempotencyKey, bodySHA256}, "\n")
}

// isControl reports an ASCII control character (CR and LF among them).
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// sign sets the signature headers of req, whose body is body, at now: version
// 1, unchanged, and version 2 over req's method, URL and Idempotency-Key
// header, which must be set already.
func sign(req *http.Request, key, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set(SignatureHeader, signature(key, ts, body))
	// Send refuses what would fail here (a URL that is not http or https, an
	// empty Idempotency-Key) before any request, and the transport refuses a
	// header holding a control character; should one get this far, it goes
	// without a version 2 signature, which its receiver refuses.
	req.Header.Del(SignatureV2Header)
	canonical, err := canonicalURL(req.URL)
	if err != nil {
		return
	}
	if sig, err := signatureV2(key, req.Method, canonical, ts, req.Header.Get(IdempotencyKeyHeader), body); err == nil {
		req.Header.Set(SignatureV2Header, sig)
	}
}
