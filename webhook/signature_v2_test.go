package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The example of docs/webhooks.md, with both signatures computed by the
// openssl commands there, not by this package.
const (
	vectorKey            = "6e736d616e2d776562686f6f6b2d6b65792d666f722d74657374732d6f6e6c79"
	vectorTimestamp      = 1767225600 // 2026-01-01T00:00:00Z
	vectorURL            = "https://hooks.example.com/nsman?tenant=a"
	vectorIdempotencyKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	vectorBody           = `{"namespace":"e2e-4711"}`
	vectorV1             = "sha256=03c7f8520752bc7d6d7e851f0e7940dc77ff2447cc0af8e7b64abca0c2f1d605"
	vectorV2             = "v2=3ed31fa364f12c9624fe61df424784fb938baae2c01084c014714e4f2e051b10"
)

// signedRequest is a request as Send's attempt builds it, signed by sign at
// now.
func signedRequest(t *testing.T, method, rawURL, idempotencyKey string, key, body []byte, now time.Time) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "nsman/test")
	req.Header.Set(IdempotencyKeyHeader, idempotencyKey)
	sign(req, key, body, now)
	return req
}

// hmacHex is the lower-case hex HMAC-SHA256 of message under key, computed
// here rather than by the code under test.
func hmacHex(key []byte, message string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(message))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestSignFixedVectors(t *testing.T) {
	key, body := []byte(vectorKey), []byte(vectorBody)
	bodySHA := sha256.Sum256(body)
	// The documented strings, spelled out field by field.
	v1 := "sha256=" + hmacHex(key, "1767225600."+vectorBody)
	v2 := "v2=" + hmacHex(key, "v2\nPOST\nhttps://hooks.example.com/nsman?tenant=a\n1767225600\n"+
		vectorIdempotencyKey+"\n"+hex.EncodeToString(bodySHA[:]))
	if v1 != vectorV1 || v2 != vectorV2 {
		t.Fatalf("the documented strings sign as %s and %s, the vector says %s and %s", v1, v2, vectorV1, vectorV2)
	}

	for _, rawURL := range []string{
		vectorURL,
		// Other spellings of it, which nsman may be configured with: the
		// same canonical URL, the same signatures.
		"HTTPS://Hooks.Example.COM/nsman?tenant=a",
		"https://hooks.example.com:443/nsman?tenant=a#fragment",
		"https://user:password@hooks.example.com/nsman?tenant=a",
	} {
		t.Run(rawURL, func(t *testing.T) {
			req := signedRequest(t, http.MethodPost, rawURL, vectorIdempotencyKey, key, body, time.Unix(vectorTimestamp, 0))
			for h, want := range map[string]string{
				TimestampHeader:   "1767225600",
				SignatureHeader:   vectorV1, // byte for byte what every earlier release sent
				SignatureV2Header: vectorV2,
			} {
				if got := req.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}

func TestSignV1Unchanged(t *testing.T) {
	// Version 1 is what it always was whatever the URL, method and key:
	// HMAC-SHA256(key, timestamp "." body), and receivers that verify it
	// keep working.
	for _, tt := range []struct {
		name, method, url, idempotencyKey string
		body                              []byte
	}{
		{name: "json body", method: http.MethodPost, url: "http://receiver-a.svc:8080/hook", idempotencyKey: "k1", body: []byte(vectorBody)},
		{name: "other receiver", method: http.MethodPost, url: "https://receiver-b.example.com/x?y=z", idempotencyKey: "k2", body: []byte(vectorBody)},
		{name: "empty body", method: http.MethodPost, url: "http://127.0.0.1:1/", idempotencyKey: "k3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1700000000, 0)
			req := signedRequest(t, tt.method, tt.url, tt.idempotencyKey, []byte("s3cret"), tt.body, now)
			want := "sha256=" + hmacHex([]byte("s3cret"), "1700000000."+string(tt.body))
			if got := req.Header.Get(SignatureHeader); got != want {
				t.Errorf("%s = %q, want %q", SignatureHeader, got, want)
			}
			if err := VerifySignature(req.Header, tt.body, []byte("s3cret"), now, time.Minute); err != nil {
				t.Errorf("VerifySignature: %v", err)
			}
		})
	}
}

func TestVerifySignatureV2(t *testing.T) {
	key := []byte("s3cret")
	body := []byte(`{"namespace":"e2e"}`)
	const signedURL = "https://receiver-a.example.com:8443/hooks/nsman?tenant=a"
	sent := time.Unix(1767225600, 0)
	req := signedRequest(t, http.MethodPost, signedURL, "0f1e2d3c4b5a69788796a5b4c3d2e1f0", key, body, sent)
	signed := req.Header
	sig := signed.Get(SignatureV2Header)

	// in is what a receiver verifies; each case changes one thing.
	type in struct {
		method, url string
		header      http.Header
		body, key   []byte
		now         time.Time
		maxAge      time.Duration
	}
	set := func(name, value string) func(*in) {
		return func(v *in) {
			v.header = signed.Clone()
			if value == "" {
				v.header.Del(name)
			} else {
				// Directly, as Set would not keep a value with a newline
				// from a map a receiver built itself.
				v.header[http.CanonicalHeaderKey(name)] = []string{value}
			}
		}
	}
	const mismatch = "signature does not match"
	tests := []struct {
		name    string
		change  func(*in)
		wantErr string // a part of the error; "" for none
	}{
		{name: "as signed", change: func(*in) {}},
		{name: "received maxAge later", change: func(v *in) { v.now = sent.Add(5 * time.Minute) }},
		{name: "received maxAge earlier", change: func(v *in) { v.now = sent.Add(-5 * time.Minute) }},
		{name: "url spelled otherwise", change: func(v *in) {
			v.url = "HTTPS://nsman:pw@Receiver-A.Example.com:8443/hooks/nsman?tenant=a#top"
		}},

		{name: "other method", change: func(v *in) { v.method = http.MethodPut }, wantErr: mismatch},
		{name: "method in lower case", change: func(v *in) { v.method = "post" }, wantErr: mismatch},
		{name: "other host", change: func(v *in) { v.url = "https://receiver-b.example.com:8443/hooks/nsman?tenant=a" }, wantErr: mismatch},
		{name: "host a suffix of the other", change: func(v *in) { v.url = "https://evil-receiver-a.example.com:8443/hooks/nsman?tenant=a" }, wantErr: mismatch},
		{name: "other port", change: func(v *in) { v.url = "https://receiver-a.example.com:9443/hooks/nsman?tenant=a" }, wantErr: mismatch},
		{name: "default port", change: func(v *in) { v.url = "https://receiver-a.example.com/hooks/nsman?tenant=a" }, wantErr: mismatch},
		{name: "other scheme", change: func(v *in) { v.url = "http://receiver-a.example.com:8443/hooks/nsman?tenant=a" }, wantErr: mismatch},
		{name: "other path", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks/other?tenant=a" }, wantErr: mismatch},
		{name: "trailing slash", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks/nsman/?tenant=a" }, wantErr: mismatch},
		{name: "escaped path", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks%2Fnsman?tenant=a" }, wantErr: mismatch},
		{name: "other query", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks/nsman?tenant=b" }, wantErr: mismatch},
		{name: "no query", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks/nsman" }, wantErr: mismatch},
		{name: "query added to", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks/nsman?tenant=a&x=1" }, wantErr: mismatch},
		{name: "timestamp replaced", change: set(TimestampHeader, strconv.FormatInt(sent.Unix()+1, 10)), wantErr: mismatch},
		{name: "idempotency key replaced", change: set(IdempotencyKeyHeader, "0f1e2d3c4b5a69788796a5b4c3d2e1f1"), wantErr: mismatch},
		{name: "body changed", change: func(v *in) { v.body = []byte(`{"namespace":"prod"}`) }, wantErr: mismatch},
		{name: "body empty", change: func(v *in) { v.body = nil }, wantErr: mismatch},
		{name: "other key", change: func(v *in) { v.key = []byte("guess") }, wantErr: mismatch},
		{name: "version 1 signature in its place", change: set(SignatureV2Header, "v2="+strings.TrimPrefix(signed.Get(SignatureHeader), "sha256=")), wantErr: mismatch},
		{name: "upper-case hex", change: set(SignatureV2Header, "v2="+strings.ToUpper(strings.TrimPrefix(sig, "v2="))), wantErr: mismatch},
		{name: "no prefix", change: set(SignatureV2Header, strings.TrimPrefix(sig, "v2=")), wantErr: mismatch},

		{name: "stale", change: func(v *in) { v.now = sent.Add(5*time.Minute + time.Second) }, wantErr: "more than 5m0s"},
		{name: "from the future", change: func(v *in) { v.now = sent.Add(-5*time.Minute - time.Second) }, wantErr: "more than 5m0s"},
		{name: "empty key", change: func(v *in) { v.key = nil }, wantErr: "empty key"},
		{name: "zero maxAge", change: func(v *in) { v.maxAge = 0 }, wantErr: "not positive"},
		{name: "no version 2 signature", change: set(SignatureV2Header, ""), wantErr: "missing"},
		{name: "no timestamp", change: set(TimestampHeader, ""), wantErr: "missing"},
		{name: "no idempotency key", change: set(IdempotencyKeyHeader, ""), wantErr: "missing"},
		{name: "no header at all", change: func(v *in) { v.header = nil }, wantErr: "missing"},
		{name: "signed timestamp with a sign", change: set(TimestampHeader, "+"+strconv.FormatInt(sent.Unix(), 10)), wantErr: "not decimal"},
		{name: "idempotency key with a newline", change: set(IdempotencyKeyHeader, "0f1e\nPOST"), wantErr: "control character"},
		{name: "method with a newline", change: func(v *in) { v.method = "POST\nhttps://x/" }, wantErr: "control character"},
		{name: "empty method", change: func(v *in) { v.method = "" }, wantErr: "empty method"},
		{name: "relative url", change: func(v *in) { v.url = "/hooks/nsman?tenant=a" }, wantErr: "url"},
		{name: "no url", change: func(v *in) { v.url = "" }, wantErr: "url"},
		{name: "url with a newline", change: func(v *in) { v.url = "https://receiver-a.example.com:8443/hooks\n/nsman?tenant=a" }, wantErr: "control character"},
		{name: "other scheme than http", change: func(v *in) { v.url = "ftp://receiver-a.example.com:8443/hooks/nsman?tenant=a" }, wantErr: "not http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := in{method: http.MethodPost, url: signedURL, header: signed, body: body, key: key, now: sent, maxAge: 5 * time.Minute}
			tt.change(&v)
			err := VerifySignatureV2(v.method, v.url, v.header, v.body, v.key, v.now, v.maxAge)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("VerifySignatureV2 = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("VerifySignatureV2 = %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func TestVerifySignatureV2KeepsSecretsOutOfErrors(t *testing.T) {
	// A receiver logs the error; the URL it states may hold a password or a
	// token in its query.
	req := signedRequest(t, http.MethodPost, "https://h.example.com/x?token=t0ken", "k", []byte("s3cret"), nil, time.Unix(1767225600, 0))
	for _, u := range []string{"https://h.example.com/y?token=t0ken", "https://user:passw0rd@h.example.com/%zz?token=t0ken"} {
		err := VerifySignatureV2(http.MethodPost, u, req.Header, nil, []byte("s3cret"), time.Unix(1767225600, 0), time.Minute)
		if err == nil || strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), "passw0rd") {
			t.Errorf("VerifySignatureV2(%q) = %v, want an error that quotes neither token nor password", u, err)
		}
	}
}

func TestSignWithoutVersion2(t *testing.T) {
	// Fields that cannot be signed unambiguously get no version 2 signature
	// (so a receiver refuses the request), never one over a string that
	// reads two ways. Send and the transport refuse such requests anyway.
	tests := []struct {
		name, url, idempotencyKey string
	}{
		{name: "newline in the idempotency key", url: "http://receiver.svc/hook", idempotencyKey: "k\nPOST"},
		{name: "no idempotency key", url: "http://receiver.svc/hook"},
		{name: "not http", url: "ftp://receiver.svc/hook", idempotencyKey: "k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header[IdempotencyKeyHeader] = []string{tt.idempotencyKey}
			req.Header.Set(SignatureV2Header, "v2=stale")
			sign(req, []byte("s3cret"), nil, time.Unix(1767225600, 0))
			if got := req.Header.Values(SignatureV2Header); len(got) != 0 {
				t.Errorf("%s = %q, want none", SignatureV2Header, got)
			}
			if req.Header.Get(SignatureHeader) == "" {
				t.Errorf("no %s", SignatureHeader)
			}
		})
	}
}

func TestCanonicalURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"https://hooks.example.com/nsman?tenant=a", "https://hooks.example.com/nsman?tenant=a"},
		{"HTTPS://Hooks.Example.COM/Nsman?Tenant=A", "https://hooks.example.com/Nsman?Tenant=A"},
		{"https://user:pw@hooks.example.com/x#frag", "https://hooks.example.com/x"},
		{"https://hooks.example.com:443/x", "https://hooks.example.com/x"},
		{"https://hooks.example.com:80/x", "https://hooks.example.com:80/x"},
		{"http://hooks.example.com:80/x", "http://hooks.example.com/x"},
		{"http://hooks.example.com:443/x", "http://hooks.example.com:443/x"},
		{"http://receiver.tools.svc:8080/hook", "http://receiver.tools.svc:8080/hook"},
		{"http://[FD00::1]:80/x", "http://[fd00::1]/x"},
		{"http://[fd00::1]:8080/x", "http://[fd00::1]:8080/x"},
		{"http://10.0.0.1", "http://10.0.0.1/"},
		{"http://10.0.0.1?a=1", "http://10.0.0.1/?a=1"},
		{"http://10.0.0.1/x?", "http://10.0.0.1/x"},
		{"http://h/a%2Fb/c?x=%2F&y", "http://h/a%2Fb/c?x=%2F&y"},
		{"http://h/a b", "http://h/a%20b"},
		{"http://h/ä", "http://h/%C3%A4"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := url.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonicalURL(u)
			if err != nil || got != tt.want {
				t.Errorf("canonicalURL = %q, %v, want %q", got, err, tt.want)
			}
			// Send makes its request from the URL's String: the receiver,
			// stating the URL as configured, must get the same.
			again, err := url.Parse(u.String())
			if err != nil {
				t.Fatal(err)
			}
			if got, err := canonicalURL(again); err != nil || got != tt.want {
				t.Errorf("canonicalURL after String = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

// recordingVerifier is a receiver that states its URL and verifies every
// request against it, answering 204 or 401, and records what it got.
type recordingVerifier struct {
	url      string // as the receiver was told nsman calls it
	key      []byte
	statuses []int // after a verified request, in turn; the last repeats

	mu       sync.Mutex
	results  []error
	requests []recordedRequest
}

func (v *recordingVerifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	err := VerifyRequest(r, v.url, body, v.key, time.Now(), time.Minute)
	v.mu.Lock()
	v.results = append(v.results, err)
	v.requests = append(v.requests, recordedRequest{r.Method, r.Header.Clone(), r.ContentLength, body})
	n := len(v.results)
	v.mu.Unlock()
	switch {
	case err != nil:
		w.WriteHeader(http.StatusUnauthorized)
	case len(v.statuses) > 0:
		w.WriteHeader(v.statuses[min(n, len(v.statuses))-1])
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (v *recordingVerifier) recorded() ([]error, []recordedRequest) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]error(nil), v.results...), append([]recordedRequest(nil), v.requests...)
}

func TestSendSignsV2EndToEnd(t *testing.T) {
	key := []byte("s3cret")
	tests := []struct {
		name string
		// path is appended to the server's URL for Send; stated, to the
		// URL the receiver states.
		path, stated string
		body         []byte
		statuses     []int
	}{
		{name: "json body", path: "/hooks/nsman?tenant=a", stated: "/hooks/nsman?tenant=a", body: []byte(vectorBody)},
		{name: "empty body", path: "/notify", stated: "/notify"},
		{name: "no path", path: "", stated: "/"},
		{name: "every attempt", path: "/hook", stated: "/hook", body: []byte(vectorBody), statuses: []int{503, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv := &recordingVerifier{key: key, statuses: tt.statuses}
			srv := startReceiver(t, rv)
			rv.url = srv.URL + tt.stated
			s := NewSender(testOptions(func(o *Options) { o.SigningKey = key }))
			d, err := s.Send(testContext(t, 30*time.Second), srv.URL+tt.path, tt.body, "0f1e2d3c4b5a69788796a5b4c3d2e1f0")
			if err != nil {
				t.Fatal(err)
			}
			results, requests := rv.recorded()
			if d.Attempts != max(len(tt.statuses), 1) || len(results) != d.Attempts {
				t.Fatalf("%d attempts, %d received, want %d", d.Attempts, len(results), max(len(tt.statuses), 1))
			}
			for i, err := range results {
				if err != nil {
					t.Errorf("attempt %d: VerifyRequest: %v", i+1, err)
				}
				// Version 1 beside it, for receivers not yet moved.
				if err := VerifySignature(requests[i].header, requests[i].body, key, time.Now(), time.Minute); err != nil {
					t.Errorf("attempt %d: VerifySignature: %v", i+1, err)
				}
			}
		})
	}
}

func TestSendSignedV2RefusedElsewhere(t *testing.T) {
	// One key signs nsman's requests to every receiver. Receiver A (a
	// tenant's, say) replays a request nsman sent it, within the time
	// window, to receiver B, or to another path of a host they share.
	key := []byte("s3cret")
	a := &recordingVerifier{key: key}
	srvA := startReceiver(t, a)
	a.url = srvA.URL + "/hook?tenant=a"
	b := &recordingVerifier{key: key}
	srvB := startReceiver(t, b)
	b.url = srvB.URL + "/hook?tenant=a"
	shared := http.NewServeMux()
	sharedA, sharedB := &recordingVerifier{key: key}, &recordingVerifier{key: key}
	shared.Handle("/tenant-a", sharedA)
	shared.Handle("/tenant-b", sharedB)
	srvShared := startReceiver(t, shared)
	sharedA.url, sharedB.url = srvShared.URL+"/tenant-a", srvShared.URL+"/tenant-b"

	s := NewSender(testOptions(func(o *Options) { o.SigningKey = key }))
	for _, rawURL := range []string{a.url, sharedA.url} {
		if _, err := s.Send(testContext(t, 30*time.Second), rawURL, []byte(vectorBody), "0f1e2d3c4b5a69788796a5b4c3d2e1f0"); err != nil {
			t.Fatal(err)
		}
	}
	_, gotA := a.recorded()
	_, gotSharedA := sharedA.recorded()

	replay := func(t *testing.T, to string, got recordedRequest, host string) {
		t.Helper()
		req, err := http.NewRequestWithContext(testContext(t, 30*time.Second), got.method, to, bytes.NewReader(got.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = got.header.Clone()
		req.Host = host
		resp, err := srvA.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("replayed to %s: %s, want 401", to, resp.Status)
		}
	}
	t.Run("to another receiver", func(t *testing.T) {
		replay(t, b.url, gotA[0], "")
		// The Host header is the replayer's to choose: B does not read it.
		replay(t, b.url, gotA[0], strings.TrimPrefix(srvA.URL, "http://"))
		results, _ := b.recorded()
		for _, err := range results {
			if err == nil || !strings.Contains(err.Error(), "signature does not match") {
				t.Errorf("B's VerifyRequest = %v, want a mismatch", err)
			}
		}
		// What version 1 alone would have let through.
		if err := VerifySignature(gotA[0].header, gotA[0].body, key, time.Now(), time.Minute); err != nil {
			t.Errorf("version 1 at B: %v, want nil (the replay it cannot tell)", err)
		}
	})
	t.Run("to another path of a shared host", func(t *testing.T) {
		replay(t, sharedB.url, gotSharedA[0], "")
		if results, _ := sharedB.recorded(); len(results) != 1 || results[0] == nil {
			t.Errorf("shared B's VerifyRequest = %v, want a mismatch", results)
		}
	})
	t.Run("to the receiver it was signed for", func(t *testing.T) {
		// The same bytes at A verify (within the window; A deduplicates by
		// the Idempotency-Key the signature covers).
		results, _ := a.recorded()
		if len(results) != 1 || results[0] != nil {
			t.Errorf("A's VerifyRequest = %v, want nil", results)
		}
	})
}

func TestVerifyRequest(t *testing.T) {
	key, body := []byte(vectorKey), []byte(vectorBody)
	now := time.Unix(vectorTimestamp, 0)
	signed := signedRequest(t, http.MethodPost, vectorURL, vectorIdempotencyKey, key, body, now)
	// What a receiver behind a proxy gets: another host, the same path.
	r := httptest.NewRequest(http.MethodPost, "http://10.0.0.7:8080/nsman?tenant=a", bytes.NewReader(body))
	r.Header = signed.Header.Clone()
	if err := VerifyRequest(r, vectorURL, body, key, now, time.Minute); err != nil {
		t.Errorf("VerifyRequest with the URL nsman calls: %v", err)
	}
	if err := VerifyRequest(r, "http://10.0.0.7:8080/nsman?tenant=a", body, key, now, time.Minute); err == nil {
		t.Error("VerifyRequest with the URL the request names = nil, want a mismatch")
	}
	if err := VerifyRequest(r, "", body, key, now, time.Minute); err == nil || !strings.Contains(err.Error(), "state the URL") {
		t.Errorf("VerifyRequest without a URL = %v, want an error asking for it", err)
	}
	if err := VerifyRequest(r, vectorURL, body, nil, now, time.Minute); err == nil || !strings.Contains(err.Error(), "empty key") {
		t.Errorf("VerifyRequest without a key = %v, want an error", err)
	}
}

// FuzzSignatureV2Fields checks that the string version 2 signs reads back
// one way only: whenever fields are accepted, splitting the string at its
// newlines gives exactly them, so no two requests that differ in a field
// share a signed string.
func FuzzSignatureV2Fields(f *testing.F) {
	f.Add("POST", "https://hooks.example.com/nsman?tenant=a", "1767225600", "0f1e2d3c4b5a69788796a5b4c3d2e1f0", []byte(vectorBody))
	f.Add("POST\nhttps://a", "b", "1", "k", []byte{})
	f.Add("POST", "https://h/x\n1", "2", "k\n3", []byte("\n"))
	f.Add("GET", "http://h/", "+1", "k\r", []byte("x"))
	f.Fuzz(func(t *testing.T, method, canonical, ts, idempotencyKey string, body []byte) {
		key := []byte("s3cret")
		sig, err := signatureV2(key, method, canonical, ts, idempotencyKey, body)
		if err != nil {
			return
		}
		digest := sha256.Sum256(body)
		bodySHA := hex.EncodeToString(digest[:])
		s := signingStringV2(method, canonical, ts, idempotencyKey, bodySHA)
		fields := strings.Split(s, "\n")
		want := []string{"v2", method, canonical, ts, idempotencyKey, bodySHA}
		if len(fields) != len(want) {
			t.Fatalf("%q splits into %d fields, want %d", s, len(fields), len(want))
		}
		for i := range want {
			if fields[i] != want[i] {
				t.Fatalf("field %d of %q is %q, want %q", i, s, fields[i], want[i])
			}
		}
		if want := "v2=" + hmacHex(key, s); sig != want {
			t.Fatalf("signature %q, want %q", sig, want)
		}
	})
}
