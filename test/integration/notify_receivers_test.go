package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// Notifications are delivered as WEBHOOK actions are, by webhook.Sender
// with its defaults (webhook/sender.go: defaultMaxAttempts and
// defaultBackoff): at most 3 attempts, 1s and then 2s apart, each bounded
// by --webhook-timeout, which these tests set to notifyTimeout. A
// notification nobody answers costs a sweep at most notifyBound.
const (
	notifyAttempts = 3
	notifyBackoff  = time.Second + 2*time.Second
	notifyTimeout  = time.Second
	notifyBound    = notifyAttempts*notifyTimeout + notifyBackoff
	// sweepMargin is what a sweep on a loaded machine may take beyond the
	// same sweep without a notification.
	sweepMargin = 5 * time.Second
)

// hangingReceiver accepts connections, reads whatever is sent and never
// answers. It records how long each connection stayed open: until the
// sender gave up on it.
type hangingReceiver struct {
	URL string

	mu    sync.Mutex
	conns []net.Conn
	held  []time.Duration
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &hangingReceiver{URL: "http://" + l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			start := time.Now()
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
			go func() {
				_, _ = io.Copy(io.Discard, c)
				r.mu.Lock()
				r.held = append(r.held, time.Since(start))
				r.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.conns {
			_ = c.Close()
		}
	})
	return r
}

// accepted counts the connections so far.
func (r *hangingReceiver) accepted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// closedAfter returns how long each connection after the first n stayed
// open, once the sender closed them all (waiting a few seconds for that).
func (r *hangingReceiver) closedAfter(n int) []time.Duration {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r.mu.Lock()
		done := len(r.held) == len(r.conns)
		held := append([]time.Duration(nil), r.held...)
		r.mu.Unlock()
		if done || time.Now().After(deadline) {
			if len(held) < n {
				return nil
			}
			return held[n:]
		}
	}
}

// refusingURL returns a URL on loopback where nothing listens: the port of
// a listener just closed, so that a connection is refused.
func refusingURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("%s still accepts connections", addr)
	}
	return "http://" + addr + "/nsman"
}

// swept is one sweep of one manager in namespace-manager acting on a
// namespace of its own.
type swept struct {
	res     nsmantest.Result
	elapsed time.Duration
	target  string
	entry   report.Entry
	status  status.Status
}

// sweepOne creates a manager in namespace-manager whose only policy acts
// at once with action on a new namespace, and sweeps it (with args, and a
// --webhook-timeout of notifyTimeout).
func sweepOne(t *testing.T, e *nsmantest.Env, action func(target string) map[string]any, args ...string) swept {
	t.Helper()
	home := nsmantest.ServiceAccountNamespace
	target := shared.Namespace(t)
	createManager(t, managerObj(home, target, target, []any{ttlPolicy("act at once", 0, action(target))}, targeting(target)))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Delete(context.Background(), target, metav1.DeleteOptions{})
	})
	start := time.Now()
	res := e.Sweep(t, append([]string{"-l", caseLabel + "=" + target, "--webhook-timeout", notifyTimeout.String()}, args...)...)
	s := swept{res: res, elapsed: time.Since(start), target: target}
	s.entry = res.Entry(t, home, target)
	s.status = managerStatus(t, home, target)
	return s
}

// timestamps, idempotencyKeys and targetUIDs match the times, the webhook
// keys (a hash of the manager's uid) and the target's uid of reports and
// records, which differ from one manager to the next.
var (
	timestamps      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	idempotencyKeys = regexp.MustCompile(`Idempotency-Key [0-9a-f]{32}`)
	targetUIDs      = regexp.MustCompile(`"targetUID":"[^"]*"`)
)

// shape is v as JSON, with target's name and uid, every time and webhook
// key replaced: what a sweep of one manager says and records, whichever
// namespace it acted on and when.
func shape(t *testing.T, v any, target string) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(data), target, "TARGET")
	s = timestamps.ReplaceAllString(s, "TIME")
	s = targetUIDs.ReplaceAllString(s, `"targetUID":"UID"`)
	return idempotencyKeys.ReplaceAllString(s, "Idempotency-Key KEY")
}

// TestUndeliverableNotifications: a notification to a receiver that
// accepts the connection and never answers, or to an address that refuses
// connections, changes nothing but the count of failed notifications. The
// action is done as by the same sweep without --notify-url (the namespace
// deleted, the webhook delivered once; a failing webhook failed), with the
// same report entry, record and exit code; the summary counts the
// notification failed; and the sweep takes no longer than without it plus
// the sender's attempts, timeouts and backoff.
func TestUndeliverableNotifications(t *testing.T) {
	e := setup(t)
	hooks := nsmantest.NewReceiver(t)
	failing := nsmantest.NewReceiver(t)
	failing.SetStatus(400) // not retried: the action fails at once
	hanging := newHangingReceiver(t)
	actions := []struct {
		name   string
		action func(target string) map[string]any
		code   int
		state  report.State
	}{
		{"DELETE", func(string) map[string]any { return deleteAction }, 0, report.StateFired},
		{"WEBHOOK", func(target string) map[string]any { return webhookAction(hooks.URL + "/" + target) }, 0, report.StateFired},
		{"failing WEBHOOK", func(target string) map[string]any { return webhookAction(failing.URL + "/" + target) }, 1, report.StateFailed},
	}
	receivers := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"no answer", func(*testing.T) string { return hanging.URL + "/nsman" }},
		{"connection refused", refusingURL},
	}
	for _, a := range actions {
		t.Run(a.name, func(t *testing.T) {
			base := sweepOne(t, e, a.action)
			wantCode(t, base.res, a.code)
			if base.entry.State != a.state || base.res.Report.Summary.Notifications != nil {
				t.Fatalf("without --notify-url: state %q (%s), notifications %v", base.entry.State, base.entry.Message, base.res.Report.Summary.Notifications)
			}
			checkDone(t, e, a.name, base, hooks, failing)
			for _, r := range receivers {
				t.Run(r.name, func(t *testing.T) {
					connections := hanging.accepted()
					got := sweepOne(t, e, a.action, "--notify-url", r.url(t))
					wantCode(t, got.res, a.code)
					if g, w := shape(t, got.entry, got.target), shape(t, base.entry, base.target); g != w {
						t.Errorf("report entry\n%s\nwithout --notify-url\n%s", g, w)
					}
					if g, w := shape(t, got.status, got.target), shape(t, base.status, base.target); g != w {
						t.Errorf("record\n%s\nwithout --notify-url\n%s", g, w)
					}
					checkDone(t, e, a.name, got, hooks, failing)
					if n := got.res.Report.Summary.Notifications; len(n) != 2 || n["sent"] != 0 || n["failed"] != 1 {
						t.Errorf("summary notifications %v, want 0 sent, 1 failed", n)
					}
					if !strings.Contains(got.res.Stderr, "notification not delivered") {
						t.Errorf("the failed notification was not logged; stderr:\n%s", got.res.Stderr)
					}
					if limit := base.elapsed + notifyBound + sweepMargin; got.elapsed > limit {
						t.Errorf("sweep took %s, more than %s (%s without --notify-url, %s for the notification)", got.elapsed, limit, base.elapsed, notifyBound)
					}
					if r.name == "no answer" {
						// Each attempt ends at its timeout.
						held := hanging.closedAfter(connections)
						if len(held) != notifyAttempts {
							t.Errorf("%d connections to the receiver that does not answer (%v), want %d attempts", len(held), held, notifyAttempts)
						}
						for _, d := range held {
							if d < notifyTimeout-100*time.Millisecond || d > notifyTimeout+time.Second {
								t.Errorf("an attempt held its connection %s, want about --webhook-timeout %s", d, notifyTimeout)
							}
						}
					}
					t.Logf("%s, notification to a receiver with %s: %s (%s without --notify-url)", a.name, r.name, got.elapsed.Round(time.Millisecond), base.elapsed.Round(time.Millisecond))
				})
			}
		})
	}
}

// checkDone checks that the sweep s did its action (named as in
// TestUndeliverableNotifications) once: the namespace deleted, or one
// request to the webhook's receiver.
func checkDone(t *testing.T, e *nsmantest.Env, action string, s swept, hooks, failing *nsmantest.Receiver) {
	t.Helper()
	receiver := hooks
	switch action {
	case "DELETE":
		if !e.NamespaceGoneOrTerminating(t, s.target) {
			t.Errorf("namespace %s not deleted", s.target)
		}
		if s.status.LastAction == nil || s.status.LastAction.Result != report.ResultSucceeded || !e.Deactivated(t, nsmantest.ServiceAccountNamespace, s.target) {
			t.Errorf("DELETE: record %+v", s.status)
		}
		return
	case "failing WEBHOOK":
		receiver = failing
	}
	n := 0
	for _, d := range receiver.Deliveries() {
		if d.Path == "/"+s.target {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%s: %d requests to the receiver, want 1", action, n)
	}
}
