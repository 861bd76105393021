package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/internal/tell/telltest"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
	"github.com/nsman/nsman/webhook"
)

// TestNotifications: with --notify-url, every action that fired or failed
// is told once (json by default, slack on request), nothing for waiting
// managers or a dry run; a notification that fails changes neither the
// outcome nor the exit code, and is counted.
func TestNotifications(t *testing.T) {
	e := setup(t)
	del, hook, idle := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := del
	refusing := nsmantest.NewReceiver(t)
	refusing.SetStatus(400)
	createManager(t, managerObj(del, del, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	// The webhook's manager is trusted, as a platform team's is: a
	// tenant's may not reach a receiver on loopback.
	home := nsmantest.ServiceAccountNamespace
	createManager(t, managerObj(home, hook, caseID, []any{ttlPolicy("report at once", 0, webhookAction(refusing.URL+"/hook"))}, targeting(hook)))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Delete(context.Background(), hook, metav1.DeleteOptions{})
	})
	createManager(t, managerObj(idle, idle, caseID, []any{ttlPolicy("in an hour", 3600, deleteAction)}))
	notify := nsmantest.NewReceiver(t)
	args := []string{"-l", caseLabel + "=" + caseID, "--notify-url", notify.URL + "/nsman"}

	if res := e.Sweep(t, append(args, "--dry-run")...); res.Report.Summary.Notifications != nil || len(notify.Deliveries()) != 0 {
		t.Fatalf("a dry run notified: %v, %d deliveries", res.Report.Summary.Notifications, len(notify.Deliveries()))
	}
	res := e.Sweep(t, args...)
	wantCode(t, res, 1) // the webhook failed
	got := map[string]tell.Notification{}
	keys := map[string]bool{}
	for _, d := range notify.Deliveries() {
		var n tell.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		got[n.Target] = n
		keys[d.Header.Get("Idempotency-Key")] = true
	}
	if len(got) != 2 || len(keys) != 2 || len(notify.Deliveries()) != 2 {
		t.Fatalf("notifications %+v, want one for %s and one for %s", got, del, hook)
	}
	if n := got[del]; n.Result != report.ResultSucceeded || n.Action != "DELETE" || n.Policy != "delete at once" || n.Manager.Name != del || n.Sweep == "" || n.Version == "" || len(n.Effects) != 1 {
		t.Errorf("DELETE notification %+v", n)
	}
	if n := got[hook]; n.Result != report.ResultFailed || n.Action != "WEBHOOK" || !strings.Contains(n.Message, "400") {
		t.Errorf("failed WEBHOOK notification %+v", n)
	}
	if s := res.Report.Summary.Notifications; s["sent"] != 2 || s["failed"] != 0 {
		t.Errorf("summary notifications %v, want 2 sent", s)
	}
	// The webhook fails again, once its backoff has passed: a failure is
	// told once.
	letBackoffPass(t, home, hook)
	res = e.Sweep(t, args...)
	wantState(t, res, home, hook, report.StateFailed)
	if n := len(notify.Deliveries()); n != 2 {
		t.Errorf("%d notifications after the same failure again, want still 2", n)
	}

	// slack, and a receiver that refuses: the outcome stands.
	slackDue := shared.Namespace(t)
	createManager(t, managerObj(slackDue, slackDue, slackDue, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	res = e.Sweep(t, "-l", caseLabel+"="+slackDue, "--notify-url", refusing.URL+"/slack", "--notify-format", "slack")
	wantCode(t, res, 0)
	wantState(t, res, slackDue, slackDue, report.StateFired)
	if s := res.Report.Summary.Notifications; s["failed"] != 1 {
		t.Errorf("summary notifications %v, want 1 failed", s)
	}
	var slack []nsmantest.Delivery
	for _, d := range refusing.Deliveries() {
		if d.Path == "/slack" {
			slack = append(slack, d)
		}
	}
	var body map[string]string
	if len(slack) == 0 || json.Unmarshal(slack[0].Body, &body) != nil || !strings.HasPrefix(body["text"], "nsman: DELETE of namespace "+slackDue) {
		t.Errorf("slack body: %d deliveries, %v", len(slack), body)
	}
}

// TestNotificationsUnderConcurrentSweeps: four sweeps at once over six due
// managers, overlapping in time, tell each outcome exactly once.
func TestNotificationsUnderConcurrentSweeps(t *testing.T) {
	e := setup(t)
	caseID := ""
	hooks := nsmantest.NewReceiver(t)
	for i := range 6 {
		ns := shared.Namespace(t)
		if caseID == "" {
			caseID = ns
		}
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("report at once", 0, webhookAction(hooks.URL+fmt.Sprintf("/%d", i)))}))
	}
	notify := nsmantest.NewReceiver(t)
	var wg sync.WaitGroup
	spans := nsmantest.NewSpans().StartTogether(4)
	for i := range 4 {
		kubeconfig := spans.Kubeconfig(t, e, fmt.Sprint(i))
		wg.Go(func() {
			e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+caseID, "--notify-url", notify.URL+"/nsman")
		})
	}
	wg.Wait()
	spans.Check(t)
	perKey := map[string]int{}
	for _, d := range notify.Deliveries() {
		perKey[d.Header.Get("Idempotency-Key")]++
	}
	if len(perKey) != 6 {
		t.Errorf("%d outcomes told, want 6", len(perKey))
	}
	for k, n := range perKey {
		if n != 1 {
			t.Errorf("outcome %s told %d times", k, n)
		}
	}
}

// notifyPath is the secret part of a notification URL, as a Slack
// incoming webhook's path is; withSecrets puts it, and a user and
// password, on a receiver's URL.
const notifyPath = "/services/T0SECRET/B0SECRET/XXSECRET?token=QSECRET"

func withSecrets(receiverURL string) string {
	return strings.Replace(receiverURL, "http://", "http://USERSECRET:PWSECRET@", 1) + notifyPath
}

// writeTemp writes content to a new file and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNotificationURLNeverShown: the notification URL is a credential. A
// sweep whose notification fails (the receiver answers 500, or nothing
// listens) logs the failure and counts it, naming the receiver by scheme
// and host alone, whether the URL came from --notify-url or
// --notify-url-file: neither its stderr nor its report nor the manager's
// record holds the URL's path, query, user or password.
func TestNotificationURLNeverShown(t *testing.T) {
	e := setup(t)
	failing := nsmantest.NewReceiver(t)
	failing.SetStatus(500)
	refusing := strings.TrimSuffix(refusingURL(t), "/nsman")
	for _, tt := range []struct {
		name     string
		receiver string
		args     func(t *testing.T, rawURL string) []string
	}{
		{"500, --notify-url-file", failing.URL, func(t *testing.T, rawURL string) []string {
			return []string{"--notify-url-file", writeTemp(t, "url", rawURL+"\n")}
		}},
		{"connection refused, --notify-url", refusing, func(_ *testing.T, rawURL string) []string {
			return []string{"--notify-url", rawURL}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := sweepOne(t, e, func(string) map[string]any { return deleteAction }, append(tt.args(t, withSecrets(tt.receiver)), "--notify-format", "slack")...)
			wantCode(t, s.res, 0)
			if n := s.res.Report.Summary.Notifications; n["failed"] != 1 {
				t.Errorf("summary notifications %v, want 1 failed", n)
			}
			if !strings.Contains(s.res.Stderr, "notification not delivered") || !strings.Contains(s.res.Stderr, tt.receiver) {
				t.Errorf("stderr names neither the failed notification nor %s:\n%s", tt.receiver, s.res.Stderr)
			}
			for what, v := range map[string]any{"stderr": s.res.Stderr, "report": s.res.Report, "record": s.status} {
				data, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(data), "SECRET") {
					t.Errorf("%s shows the notification URL:\n%s", what, data)
				}
			}
		})
	}
}

// TestNotificationFromFilesSigned: --notify-url-file's URL receives the
// notification, signed with --notify-signing-key-file's key, not
// --webhook-signing-key-file's, which still signs the WEBHOOK action.
func TestNotificationFromFilesSigned(t *testing.T) {
	e := setup(t)
	hooks := nsmantest.NewReceiver(t)
	notify := nsmantest.NewReceiver(t)
	webhookKey, notifyKey := "webhook-key", "notify-key"
	s := sweepOne(t, e, func(target string) map[string]any { return webhookAction(hooks.URL + "/" + target) },
		"--notify-url-file", writeTemp(t, "url", "\n"+notify.URL+"/services/T0/B0/X\n"),
		"--notify-signing-key-file", writeTemp(t, "notify-key", notifyKey+"\n"),
		"--webhook-signing-key-file", writeTemp(t, "webhook-key", webhookKey))
	wantCode(t, s.res, 0)
	got := notify.Deliveries()
	if len(got) != 1 || got[0].Path != "/services/T0/B0/X" {
		t.Fatalf("notifications %+v, want one at /services/T0/B0/X", got)
	}
	if err := signedWith(got[0].Header, got[0].Body, notifyKey); err != nil {
		t.Errorf("notification: %v", err)
	}
	var hook []nsmantest.Delivery
	for _, d := range hooks.Deliveries() {
		if d.Path == "/"+s.target {
			hook = append(hook, d)
		}
	}
	if len(hook) != 1 {
		t.Fatalf("%d WEBHOOK requests, want 1", len(hook))
	}
	if err := signedWith(hook[0].Header, hook[0].Body, webhookKey); err != nil {
		t.Errorf("WEBHOOK action: %v", err)
	}
}

// signedWith checks a request's version 1 signature (webhook.SignatureHeader,
// the HMAC-SHA256 of the timestamp, a dot and the body), which every 1.x
// release sends.
func signedWith(header http.Header, body []byte, key string) error {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(header.Get(webhook.TimestampHeader) + "."))
	mac.Write(body)
	if got, want := header.Get(webhook.SignatureHeader), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		return fmt.Errorf("signature %q, want %q (key %q)", got, want, key)
	}
	return nil
}

// TestSlackNotificationOfAFailedWebhook: a WEBHOOK receiver that fails
// with a reason phrase meant for the platform team's channel (a
// channel-wide mention, a disguised link) does not reach it: the Slack
// notification says "HTTP 400", and has no <, > or & of anyone but nsman.
func TestSlackNotificationOfAFailedWebhook(t *testing.T) {
	e := setup(t)
	hook := telltest.Answering(t, "HTTP/1.1 400 "+telltest.Evil)
	notify := nsmantest.NewReceiver(t)
	s := sweepOne(t, e, func(target string) map[string]any { return webhookAction(hook + "/" + target) },
		"--notify-url", notify.URL+"/slack", "--notify-format", "slack")
	wantCode(t, s.res, 1)
	got := notify.Deliveries()
	if len(got) != 1 {
		t.Fatalf("%d notifications, want 1", len(got))
	}
	var body map[string]string
	if err := json.Unmarshal(got[0].Body, &body); err != nil {
		t.Fatalf("notification %s: %v", got[0].Body, err)
	}
	text := body["text"]
	if !strings.HasPrefix(text, "nsman: WEBHOOK of namespace "+s.target) || !strings.Contains(text, "HTTP 400") {
		t.Errorf("text %q, want the failed WEBHOOK with HTTP 400", text)
	}
	if strings.ContainsAny(strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(text), "<>&") || strings.Contains(text, "evil") || strings.Contains(text, "channel") {
		t.Errorf("text %q carries the receiver's reason phrase or an unescaped <, > or &", text)
	}
}

// TestChatFormatsReachTheirStandIns: a sweep's DELETE is told in the teams
// and googlechat formats to stand-ins of a Teams Workflows and a Google
// Chat webhook, each of which holds the body to its service's documented
// schema; the policy's name, which a tenant chooses, reaches neither as
// markup (a name may begin and end with _, italics to both).
func TestChatFormatsReachTheirStandIns(t *testing.T) {
	e := setup(t)
	for _, tt := range []struct {
		format   string
		receiver func(testing.TB) *telltest.Receiver
	}{
		{"teams", telltest.Teams},
		{"googlechat", telltest.GoogleChat},
	} {
		t.Run(tt.format, func(t *testing.T) {
			ns := shared.Namespace(t)
			createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("_delete_ at once", 0, deleteAction)}))
			r := tt.receiver(t)
			res := e.Sweep(t, "-l", caseLabel+"="+ns, "--notify-url", r.URL+"/webhook", "--notify-format", tt.format)
			wantCode(t, res, 0)
			wantState(t, res, ns, ns, report.StateFired)
			if s := res.Report.Summary.Notifications; s["sent"] != 1 {
				t.Errorf("summary notifications %v, want 1 sent", s)
			}
			bodies := r.Bodies()
			if len(bodies) != 1 {
				t.Fatalf("the %s stand-in accepted %d bodies, want 1", tt.format, len(bodies))
			}
			body := string(bodies[0])
			if !strings.Contains(body, "DELETE of namespace "+ns) || !strings.Contains(body, "＿delete＿ at once") || strings.Contains(body, "_delete_") {
				t.Errorf("%s body does not tell the DELETE of %s with the policy's name escaped:\n%s", tt.format, ns, body)
			}
		})
	}
}
