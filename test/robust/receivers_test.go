package robust

import (
	"bytes"
	cryptotls "crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestHostileReceivers sends webhooks to receivers that hang, trickle bytes,
// answer with 10 MiB, redirect to the cloud metadata address or present an
// untrusted certificate, and to the metadata address itself: each receiver
// is reached (one that hangs once: it is not tried again), each is bounded
// in time and memory, refused where it must be,
// and recorded on its manager, and the rest of the sweep is unaffected. The
// managers are tenants' (their namespaces are not trusted): each receiver
// is a Service of its manager's own namespace, and what the manager reads
// of a failure is the sanitized summary, while nsman's log has the cause.
func TestHostileReceivers(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	// reached counts the connections each hostile receiver accepted: a
	// receiver never reached showed nothing hostile.
	reached := map[string]*atomic.Int32{}
	// hostile serves h as Service name of namespace ns (over TLS with a
	// certificate nsman does not trust when tls is set) and returns its URL.
	hostile := func(ns, name string, h http.Handler, tls bool) string {
		n := &atomic.Int32{}
		reached[name] = n
		srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				n.Add(1)
			}
		}, ErrorLog: log.New(io.Discard, "", 0)} // quiet: nsman refuses the untrusted one's handshake, as it must
		if tls {
			srv.TLSConfig = &cryptotls.Config{}
		}
		return nsmantest.StartAsService(t, shared.Admin, ns, name, srv)
	}
	handlers := map[string]http.Handler{
		"hang": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second): // far beyond --webhook-timeout
			}
		}),
		"trickle": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			for range 10 {
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}),
		"big": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := []byte(strings.Repeat("x", 1<<20))
			for range 10 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}),
		"redirect":  http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusFound),
		"untrusted": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
	}

	const run = "receivers"
	// Each receiver's URL, made in its manager's namespace; the metadata
	// address is none of a tenant's Services, and refused.
	cases := map[string]struct {
		url       func(ns string) string
		want      report.State
		wantInMsg string
	}{
		"hang":      {func(ns string) string { return hostile(ns, "hang", handlers["hang"], false) + "/h" }, report.StateFailed, "timed out"},
		"trickle":   {func(ns string) string { return hostile(ns, "trickle", handlers["trickle"], false) + "/t" }, report.StateFired, ""}, // a 200 is the answer; the body is not waited for
		"big":       {func(ns string) string { return hostile(ns, "big", handlers["big"], false) + "/b" }, report.StateFired, ""},
		"redirect":  {func(ns string) string { return hostile(ns, "redirect", handlers["redirect"], false) + "/r" }, report.StateFailed, "failed: HTTP 302"},
		"untrusted": {func(ns string) string { return hostile(ns, "untrusted", handlers["untrusted"], true) + "/u" }, report.StateFailed, "failed: no connection"},
		"metadata":  {func(string) string { return "http://169.254.169.254/latest/meta-data/" }, report.StateFailed, "refused"},
	}
	names := map[string]string{}
	for name, c := range cases {
		ns := shared.Namespace(t)
		names[name] = ns
		createManager(t, e, ns, run, 0, map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": c.url(ns)}})
	}
	ordinary := shared.Namespace(t)
	createManager(t, e, ordinary, run, 0, map[string]any{"type": "DELETE"})

	began := time.Now()
	// At warn, the log has each failed webhook's cause ("webhook not
	// delivered"), which a tenant does not read.
	// Through the launcher: nsman's own peak RSS, not this test process's.
	var stdout, stderr bytes.Buffer
	res, err := nsmantest.Launch(t.Context(), &stdout, &stderr, bin, "sweep", "--kubeconfig", e.Kubeconfig, "-l", "nsman.test/crash="+run, "--webhook-timeout", "1s", "-o", "json", "--log-level", "warn", "--log-format", "json")
	took := time.Since(began)
	if err != nil || res.Code != 1 {
		t.Fatalf("exit %d (%v), want status 1 for the failed webhooks\n%s", res.Code, err, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	rss := res.MaxRSS // KiB
	t.Logf("sweep took %s, peak RSS %d MiB", took.Round(time.Millisecond), rss/1024)
	if took > 20*time.Second {
		t.Errorf("sweep took %s: a hostile receiver held it", took)
	}
	if rss > 100*1024 {
		t.Errorf("peak RSS %d MiB: a response was read whole", rss/1024)
	}
	for name, c := range cases {
		ns := names[name]
		got := rep.Entries[indexOf(t, rep, ns)]
		if got.State != c.want || !strings.Contains(got.Message, c.wantInMsg) {
			t.Errorf("%s: %s (%s), want %s mentioning %q", name, got.State, got.Message, c.want, c.wantInMsg)
		}
		if c.want == report.StateFailed {
			st := e.Manager(t, ns, ns).Object["status"].(map[string]any)
			last, _ := st["lastAction"].(map[string]any)
			if last["result"] != report.ResultFailed || e.Deactivated(t, ns, ns) {
				t.Errorf("%s: status %v, want a failed lastAction and the manager active", name, st)
			}
			if msg, _ := last["message"].(string); !strings.Contains(msg, c.wantInMsg) {
				t.Errorf("%s: lastAction message %q, want it mentioning %q", name, msg, c.wantInMsg)
			}
		}
	}
	if got := rep.Entries[indexOf(t, rep, ordinary)]; got.State != report.StateFired {
		t.Errorf("the ordinary manager: %s (%s), want fired", got.State, got.Message)
	}
	// The tenant read "failed: no connection" of the untrusted receiver;
	// nsman's log says it was the certificate.
	logged := undelivered(t, stderr.String())
	if cause := logged[names["untrusted"]]; !strings.Contains(cause, "certificate signed by unknown authority") {
		t.Errorf("untrusted: nsman logged %q, want the certificate's fault; log:\n%s", cause, stderr.String())
	}
	if msg := rep.Entries[indexOf(t, rep, names["untrusted"])].Message; strings.Contains(msg, "certificate") {
		t.Errorf("untrusted: the tenant reads %q, which names the certificate", msg)
	}
	for name, n := range reached {
		if n.Load() == 0 {
			t.Errorf("the %s receiver was never reached", name)
		}
	}
	// A receiver that did not answer in time is not tried again.
	if n := reached["hang"].Load(); n != 1 {
		t.Errorf("the hanging receiver was reached %d times, want once", n)
	}
}

// undelivered reads nsman's JSON log and returns, by manager namespace,
// the error of each "webhook not delivered" line.
func undelivered(t *testing.T, logText string) map[string]string {
	t.Helper()
	errs := map[string]string{}
	for line := range strings.Lines(logText) {
		var rec struct{ Msg, Manager, Error string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "webhook not delivered" {
			continue
		}
		ns, _, _ := strings.Cut(rec.Manager, "/")
		errs[ns] = rec.Error
	}
	return errs
}

func indexOf(t *testing.T, r report.Report, ns string) int {
	t.Helper()
	for i, e := range r.Entries {
		if e.Namespace == ns {
			return i
		}
	}
	t.Fatalf("no entry for %s", ns)
	return -1
}
