package tell

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell/telltest"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// sendError is the error of a real webhook.Sender's one attempt to rawURL.
func sendError(t *testing.T, rawURL string) error {
	t.Helper()
	_, err := webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second}).Send(t.Context(), rawURL, []byte("{}"), "key")
	if err == nil {
		t.Fatalf("POST %s succeeded, want a failure", rawURL)
	}
	return err
}

// slackText is the text of n's Slack body.
func slackText(t *testing.T, n Notification) string {
	t.Helper()
	body, err := notificationBody(n, NotifySlack)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(body, &got); err != nil || len(got) != 1 {
		t.Fatalf("body %s: %v, want {\"text\": ...} alone", body, err)
	}
	return got["text"]
}

// TestSlackBodyEscapes: in the Slack text, what nsman did not write
// (names, the message, the effects) has &, < and > escaped as Slack asks,
// and a failed webhook shows its status code, not the receiver's reason
// phrase; nsman's own words are left as they are.
func TestSlackBodyEscapes(t *testing.T) {
	hook := telltest.Answering(t, "HTTP/1.1 400 "+telltest.Evil)
	failure := sendError(t, hook+"/hook")
	// The webhook package tells the code alone, whatever phrase came with it.
	if strings.Contains(failure.Error(), "channel") || !strings.Contains(failure.Error(), "HTTP 400 after 1 attempt") {
		t.Fatalf("webhook error %q: want the status code, not the receiver's reason phrase", failure)
	}
	n := Notification{
		Manager: NotificationManager{Namespace: "team-a", Name: "m<!here>"}, Target: "preview-1",
		Policy: "tell <@U123> & co @channel @here @all", Action: policy.ActionWebhook, Result: report.ResultFailed,
		Message: failure.Error(), Effects: []string{"POST " + hook + "/hook?a=1&b=<2>"},
	}
	text := slackText(t, n)
	for _, raw := range []string{"<!", "<https", "<@", "|click>", "evil", "& co", "&b", "@channel", "@here", "@all", "@U123"} {
		if strings.Contains(text, raw) {
			t.Errorf("text contains %q:\n%s", raw, text)
		}
	}
	for _, want := range []string{
		"nsman: WEBHOOK of namespace preview-1 by manager team-a/m&lt;!here&gt; (policy \"tell &lt;@\u200bU123&gt; &amp; co @\u200bchannel @\u200bhere @\u200ball\") failed: ",
		": HTTP 400 after 1 attempt\n",
		"?a=1&amp;b=&lt;2&gt;",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(text), "<>&") {
		t.Errorf("text has an unescaped &, < or >:\n%s", text)
	}

	// json carries the record as it is: its receiver renders it.
	body, err := notificationBody(n, NotifyJSON)
	if err != nil {
		t.Fatal(err)
	}
	var got Notification
	if err := json.Unmarshal(body, &got); err != nil || got.Message != n.Message || got.Policy != n.Policy {
		t.Errorf("json body %s: %v, want the message and policy unchanged", body, err)
	}
}

// TestSlackBodyKeepsNsmansWords: a notification with nothing to escape is
// the text it always was.
func TestSlackBodyKeepsNsmansWords(t *testing.T) {
	text := slackText(t, Notification{
		Manager: NotificationManager{Namespace: "ops", Name: "e2e-leftovers"}, Rule: true, Target: "e2e-42",
		Policy: "delete after a day", Action: policy.ActionDelete, Result: report.ResultSucceeded,
		Message: "TTL 1d elapsed at 2026-11-23T17:00:00Z", Effects: []string{"delete namespace e2e-42"},
	})
	want := "nsman: DELETE of namespace e2e-42 by rule ops/e2e-leftovers (policy \"delete after a day\") succeeded: TTL 1d elapsed at 2026-11-23T17:00:00Z\ndelete namespace e2e-42"
	if text != want {
		t.Errorf("text\n%s\nwant\n%s", text, want)
	}
}

// TestSlackBodySaysWhatWasReclaimed: a DELETE's notification ends with
// what it freed.
func TestSlackBodySaysWhatWasReclaimed(t *testing.T) {
	text := slackText(t, Notification{
		Manager: NotificationManager{Namespace: "ops", Name: "cleaner"}, Target: "e2e-42", Policy: "ttl", Action: policy.ActionDelete, Result: report.ResultSucceeded,
		Reclaimed: &report.Reclaimed{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi"), Storage: resource.MustParse("10Gi"), LoadBalancers: 1},
	})
	if want := "\nreclaimed: cpu 1500m, memory 2Gi, storage 10Gi, 1 load balancer(s)"; !strings.HasSuffix(text, want) {
		t.Errorf("text\n%s\nwant it to end with %q", text, want)
	}
}

// markdown is what a tenant might write where a notification repeats it,
// to reach the platform team's Mattermost channel: an image that loads
// from its server, a link whose text hides where it goes, emphasis, code,
// a line of its own (a heading, a quote) and text shown backwards.
const markdown = "![x](http://evil.example/pixel.png) [Log in again](https://evil.example/login) *now* _here_ ~~gone~~ `code` \\[ ~town-square\n# Heading\r\n> quoted \u202egnp.exe"

// markupLeft is what of text Slack or Mattermost could read as markup:
// the characters left once every backslash escape is taken out, each "://"
// that no zero-width space breaks, an _ at the edge of a word, a line
// break, a format character.
func markupLeft(text string) []string {
	var left []string
	plain := regexp.MustCompile(`\\.`).ReplaceAllString(text, "")
	for _, c := range "[]*`~\\\n\r\u202e" {
		if strings.ContainsRune(plain, c) {
			left = append(left, strconv.QuoteRune(c))
		}
	}
	if strings.Contains(plain, "://") {
		left = append(left, "://")
	}
	if regexp.MustCompile(`(^|\W)_|_(\W|$)`).MatchString(plain) {
		left = append(left, "_ at a word's edge")
	}
	return left
}

// TestSlackBodyEscapesMarkdown: Markdown in what nsman did not write (the
// message, the effects) is escaped as well as Slack's markup: no link, no
// image, no emphasis or code, no URL to follow, no line of its own; what
// is left reads as it was written, but for the backslashes.
func TestSlackBodyEscapesMarkdown(t *testing.T) {
	n := Notification{
		Manager: NotificationManager{Namespace: "team-a", Name: "preview"}, Target: "preview-1",
		Policy: "clean_up after _a day_", Action: policy.ActionScaleDown, Result: report.ResultFailed,
		Message: markdown, Effects: []string{"scale deployment team-a/web: " + markdown},
	}
	text := slackText(t, n)
	// nsman's own line breaks alone: the message's line and one per effect.
	body, _, _ := strings.Cut(text, "\n")
	effects := strings.Split(text, "\n")[1:]
	if len(effects) != len(n.Effects) {
		t.Fatalf("text has %d lines, want %d:\n%s", len(effects)+1, len(n.Effects)+1, text)
	}
	for _, part := range append([]string{body}, effects...) {
		if left := markupLeft(part); len(left) > 0 {
			t.Errorf("markup left %v in\n%s", left, part)
		}
	}
	for _, want := range []string{
		`(policy "clean_up after \_a day\_")`,
		"!\\[x\\](http:\u200b//evil.\u200bexample/pixel.\u200bpng) \\[Log in again\\](https:\u200b//evil.\u200bexample/login) \\*now\\* \\_here\\_ \\~\\~gone\\~\\~ \\`code\\` \\\\\\[ \\~town-square # Heading  &gt; quoted  gnp.\u200bexe",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

// A bare domain is no link either: Slack links evil.example, Mattermost
// www.evil.example.
func TestSlackBodyBreaksBareDomains(t *testing.T) {
	got := markupEscape("Log in again at www.evil.example/login or evil.example, v1.2")
	for _, linked := range []string{"www.evil", "evil.example", "v1.2"} {
		if strings.Contains(got, linked) {
			t.Errorf("%q keeps %q whole", got, linked)
		}
	}
	if want := "Log in again at www.\u200bevil.\u200bexample/login or evil.\u200bexample, v1.\u200b2"; got != want {
		t.Errorf("escaped %q, want %q", got, want)
	}
}

// TestSlackBodyLeavesOutAnnotationValues: a notification says that an
// annotation of the namespace was ignored, never what it said, even when
// the message was cut inside the value; the JSON body keeps the message
// as the entry has it.
func TestSlackBodyLeavesOutAnnotationValues(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := policy.Manager{Namespace: "team-a", Name: "preview", Generation: 1,
		Policies: []policy.Policy{{Name: "idle a day", Condition: policy.Condition{Type: policy.ConditionIdle, Idle: 24 * time.Hour}, Action: policy.Action{Type: policy.ActionDelete}}}}
	out := policy.Evaluate(m, policy.Input{Now: created.Add(72 * time.Hour), TargetCreated: created, TargetTouched: markdown, Activity: &policy.Activity{}})
	if out.Verdict != policy.Fire || !strings.Contains(out.Reason, "evil.example") {
		t.Fatalf("evaluation: %s, %q; want it to fire, quoting the touched annotation", out.Verdict, out.Reason)
	}
	_, expiryErr := policy.ParseExpiry(markdown)
	for _, msg := range []string{
		out.Reason,
		status.Truncate(out.Reason, strings.Index(out.Reason, "evil.example")+20),
		fmt.Sprintf("annotation %s: %v: the namespace never expires by it", policy.ExpiresAnnotation, expiryErr),
	} {
		n := Notification{Manager: NotificationManager{Namespace: "team-a", Name: "preview"}, Target: "preview", Policy: "idle a day", Action: policy.ActionDelete, Result: report.ResultSucceeded, Message: msg}
		text := slackText(t, n)
		for _, raw := range []string{"evil", "Log in", "pixel", "Heading", "quoted", "gnp"} {
			if strings.Contains(text, raw) {
				t.Errorf("text shows the annotation's value (%q):\n%s", raw, text)
			}
		}
		if !strings.Contains(text, ": its value ") {
			t.Errorf("text does not say the annotation's value was left out:\n%s", text)
		}
		body, err := notificationBody(n, NotifyJSON)
		if err != nil {
			t.Fatal(err)
		}
		var got Notification
		if err := json.Unmarshal(body, &got); err != nil || got.Message != msg {
			t.Errorf("json body %s: %v, want the message unchanged", body, err)
		}
	}
	if text := slackText(t, Notification{Message: out.Reason}); !strings.Contains(text, "(annotation "+markupEscape(policy.TouchedAnnotation)+": its value is not an RFC 3339 time (2026-11-24T09:30:00Z): ignored)") {
		t.Errorf("text does not say the touched annotation was ignored:\n%s", text)
	}
}

// TestRedactURL: a URL is shown by its scheme and host alone.
func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{"https://hooks.slack.com/services/T000/B000/XXXX", "https://hooks.slack.com/…"},
		{"https://hooks.slack.com", "https://hooks.slack.com"},
		{"https://hooks.slack.com/", "https://hooks.slack.com"},
		{"http://user:pass@10.0.0.1:8080", "http://10.0.0.1:8080/…"},
		{"https://chat.example.com?token=abc", "https://chat.example.com/…"},
		{"https://chat.example.com/#frag", "https://chat.example.com/…"},
		{"ftp://files.example.com/secret", "ftp://files.example.com/…"},
		{"hooks.slack.com/services/T000/B000/XXXX", "(a URL that is not shown)"},
		{"https://hooks.slack.com/services/%zz", "(a URL that is not shown)"},
		{"mailto:ops@example.com", "(a URL that is not shown)"},
		{"", "(a URL that is not shown)"},
	} {
		if got := RedactURL(tt.raw); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// notifyURL is a notification URL to host whose every part but scheme and
// host is secret.
func notifyURL(host string) string {
	return "http://USERSECRET:PWSECRET@" + host + "/services/T0SECRET/B0SECRET/XXSECRET?token=QSECRET"
}

// TestNotifierRedact: what is left of an error that quotes the URL in any
// form is its scheme and host; an error that still names a secret part is
// not shown.
func TestNotifierRedact(t *testing.T) {
	raw := notifyURL("hooks.example.com")
	n := NewNotifier(raw, NotifySlack, nil)
	for _, tt := range []struct{ err, want string }{
		{"webhook " + raw + ": 500 Internal Server Error after 3 attempts", "webhook http://hooks.example.com/…: 500 Internal Server Error after 3 attempts"},
		{"webhook http://USERSECRET:xxxxx@hooks.example.com/services/T0SECRET/B0SECRET/XXSECRET?token=QSECRET: no host", "webhook http://hooks.example.com/…: no host"},
		{"webhook http://hooks.example.com: 500 after 1 attempt", "webhook http://hooks.example.com: 500 after 1 attempt"},
		{`parse "/services/T0SECRET/B0SECRET/XXSECRET": invalid`, "notification to http://hooks.example.com/… failed (the error named the URL, and is not shown)"},
		{"token=QSECRET refused", "notification to http://hooks.example.com/… failed (the error named the URL, and is not shown)"},
	} {
		if got := n.Redact(errors.New(tt.err)); got != tt.want {
			t.Errorf("redact(%q)\n = %q\nwant %q", tt.err, got, tt.want)
		}
	}
}

// A SLEEP policy's wake says so, in both formats; its sleep does not.
func TestNotificationsTellAWake(t *testing.T) {
	for _, woke := range []bool{false, true} {
		n := Notification{Manager: NotificationManager{Namespace: "ops", Name: "dev-nights"}, Rule: true, Target: "dev-7",
			Policy: "nights", Action: policy.ActionSleep, Result: report.ResultSucceeded, Woke: woke}
		want := map[bool]string{false: "nsman: SLEEP of namespace dev-7", true: "nsman: SLEEP (wake) of namespace dev-7"}[woke]
		if text := slackText(t, n); !strings.HasPrefix(text, want) {
			t.Errorf("woke %t: text %q, want it to begin %q", woke, text, want)
		}
		body, err := notificationBody(n, NotifyJSON)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(body), `"woke":true`); got != woke {
			t.Errorf("woke %t: JSON %s", woke, body)
		}
	}
}
