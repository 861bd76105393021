package execute

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// notified is a notification a receiver got, with its Idempotency-Key.
type notified struct {
	tell.Notification
	key string
}

// notifyReceiver is a receiver of --notify-url on loopback, answering
// code (0: gone, nothing listening), and what it received; its URL's path
// is a secret.
func notifyReceiver(t *testing.T, code int) (url string, got func() []notified) {
	t.Helper()
	var (
		mu  sync.Mutex
		all []notified
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n notified
		if err := json.Unmarshal(body, &n.Notification); err != nil {
			t.Errorf("notification %s: %v", body, err)
		}
		n.key = r.Header.Get("Idempotency-Key")
		mu.Lock()
		all = append(all, n)
		mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	if code == 0 {
		srv.Close()
	}
	return srv.URL + "/services/T0/B0/secret", func() []notified {
		mu.Lock()
		defer mu.Unlock()
		return append([]notified(nil), all...)
	}
}

// notifyingExecutor is an executor whose notifications go to url, and
// whose log is kept in log.
func notifyingExecutor(t *testing.T, url string, log *bytes.Buffer) *Executor {
	t.Helper()
	w := newFakeWriter()
	w.done = report.StateFired
	x := newExecutor(t, w, emptyReader(t))
	x.Notifier = tell.NewNotifier(url, tell.NotifyJSON, webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second}))
	x.Log = slog.New(slog.NewTextHandler(log, nil))
	return x
}

// The outcome of an action is told once: a success, a first failure; not
// a failure told before, nor anything without a notifier. A notification
// that fails is counted and logged without the URL's path.
func TestNotify(t *testing.T) {
	freed := &report.Reclaimed{LoadBalancers: 1}
	for _, tt := range []struct {
		name         string
		none         bool // no notifier
		code         int
		err          error
		failedBefore bool
		// want: the result told (none: nothing sent), its message, the
		// counts of notifications sent and failed.
		result       string
		message      string
		sent, failed int64
	}{
		{name: "no notifier", none: true, code: http.StatusOK},
		{name: "a success", code: http.StatusOK, result: report.ResultSucceeded, message: "expired", sent: 1},
		{name: "a first failure", code: http.StatusOK, err: errors.New("HTTP 500"), result: report.ResultFailed, message: "HTTP 500", sent: 1},
		{name: "a failure told before", code: http.StatusOK, err: errors.New("HTTP 500"), failedBefore: true},
		{name: "a success after failures", code: http.StatusOK, failedBefore: true, result: report.ResultSucceeded, message: "expired", sent: 1},
		{name: "the receiver failing", code: http.StatusBadRequest, result: report.ResultSucceeded, message: "expired", failed: 1},
		{name: "the receiver gone", failed: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, got := notifyReceiver(t, tt.code)
			var log bytes.Buffer
			x := notifyingExecutor(t, url, &log)
			if tt.none {
				x.Notifier = nil
			}
			d := decision(rule)
			x.Notify(t.Context(), d.Manager, d.Plan, []string{"delete namespace team-a"}, freed, tt.err, tt.failedBefore)
			received := got()
			if tt.result == "" {
				if len(received) != 0 {
					t.Errorf("sent %+v, want nothing", received)
				}
			} else if n := received; len(n) != 1 || n[0].Result != tt.result || n[0].Message != tt.message || !n[0].Rule || n[0].Target != "team-a" ||
				n[0].Policy != "expire" || n[0].Action != policy.ActionDelete || n[0].Sweep != "sweep-1" || !n[0].Time.Equal(sweepNow) ||
				n[0].Reclaimed == nil || n[0].Reclaimed.LoadBalancers != 1 || len(n[0].Effects) != 1 || n[0].key == "" {
				t.Errorf("sent %+v; want one of rule team-a/m's DELETE of team-a by sweep-1, %s: %q, with its effects, what it freed and a key", n, tt.result, tt.message)
			}
			if sent, failed := x.Counts.NotifySent.Load(), x.Counts.NotifyFailed.Load(); sent != tt.sent || failed != tt.failed {
				t.Errorf("%d sent, %d failed; want %d, %d", sent, failed, tt.sent, tt.failed)
			}
			if tt.failed > 0 && (!strings.Contains(log.String(), "notification not delivered") || strings.Contains(log.String(), "secret")) {
				t.Errorf("log %q: want the failure, without the URL's path", log.String())
			}
		})
	}
}

// A notification's key is the firing's and the result: the same outcome
// told again (by a sweep completing a claim) carries the same key, another
// result, or another generation's firing, another.
func TestNotifyKey(t *testing.T) {
	url, got := notifyReceiver(t, http.StatusOK)
	var log bytes.Buffer
	x := notifyingExecutor(t, url, &log)
	d := decision()
	x.Notify(t.Context(), d.Manager, d.Plan, nil, nil, nil, false)
	x.Notify(t.Context(), d.Manager, d.Plan, nil, nil, nil, false)
	x.Notify(t.Context(), d.Manager, d.Plan, nil, nil, errors.New("refused"), false)
	next := decision(func(d *decide.Decision) { d.Plan.Generation = 4 })
	x.Notify(t.Context(), next.Manager, next.Plan, nil, nil, nil, false)
	n := got()
	if len(n) != 4 {
		t.Fatalf("%d sent, want 4", len(n))
	}
	if n[0].key != n[1].key || n[0].key == n[2].key || n[0].key == n[3].key || n[2].key == n[3].key {
		t.Errorf("keys %q, %q, %q, %q: want the first two alike, the rest apart", n[0].key, n[1].key, n[2].key, n[3].key)
	}
}

// An action tells its outcome, unless a WEBHOOK was deferred (it was not
// tried) or its failure was told before.
func TestActNotifies(t *testing.T) {
	hook := webhookTo("http://hooks.example.com/x")
	for _, tt := range []struct {
		name       string
		d          decide.Decision
		prior      status.Prior
		deliverErr error
		result     string // "": nothing told
	}{
		{name: "a DELETE", d: decision(), result: report.ResultSucceeded},
		{name: "a WEBHOOK delivered", d: decision(hook, rule), result: report.ResultSucceeded},
		{name: "a WEBHOOK failing", d: decision(hook, rule), deliverErr: errors.New("HTTP 500"), result: report.ResultFailed},
		{name: "a WEBHOOK failing again", d: decision(hook, rule), prior: failedTwice, deliverErr: errors.New("HTTP 500")},
		{name: "a WEBHOOK deferred", d: decision(hook, rule), deliverErr: fmt.Errorf("receiver silent: %w", webhook.ErrDeferred)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, got := notifyReceiver(t, http.StatusOK)
			var log bytes.Buffer
			x := notifyingExecutor(t, url, &log)
			x.Writer.(*fakeWriter).deliverErr = tt.deliverErr
			if _, acted, _ := x.act(t.Context(), &fakeRecord{prior: tt.prior}, tt.d); !acted {
				t.Fatal("not acted")
			}
			var results []string
			for _, n := range got() {
				results = append(results, n.Result)
			}
			if want := []string{tt.result}; tt.result == "" && len(results) != 0 || tt.result != "" && fmt.Sprint(results) != fmt.Sprint(want) {
				t.Errorf("told %q, want %q", results, tt.result)
			}
		})
	}
}
