package tell

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/internal/tell/telltest"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// sentAt is the sweep's time in the chat formats' tests.
var sentAt = time.Date(2026, 11, 23, 17, 0, 31, 0, time.UTC)

// deleted is a DELETE's notification with nothing to escape.
func deleted(mutate ...func(*Notification)) Notification {
	n := Notification{
		Manager: NotificationManager{Namespace: "ops", Name: "e2e-leftovers"}, Rule: true, Target: "e2e-42",
		Policy: "delete after a day", Action: policy.ActionDelete, Result: report.ResultSucceeded,
		Message: "TTL 1d elapsed at 2026-11-23T17:00:00Z", Effects: []string{"delete namespace e2e-42"},
		Reclaimed: &report.Reclaimed{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi"), Storage: resource.MustParse("10Gi"), LoadBalancers: 1},
		Time:      sentAt,
	}
	for _, m := range mutate {
		m(&n)
	}
	return n
}

// sendThrough sends n in format to a stand-in of its receiver, through a
// real webhook.Sender, and returns the body the stand-in accepted.
func sendThrough(t *testing.T, format string, r *telltest.Receiver, n Notification) []byte {
	t.Helper()
	sender := webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second})
	if err := NewNotifier(r.URL+"/webhook", format, sender).Send(t.Context(), n, "key"); err != nil {
		t.Fatalf("send %s: %v", format, err)
	}
	bodies := r.Bodies()
	if len(bodies) == 0 {
		t.Fatalf("the %s stand-in accepted nothing", format)
	}
	return bodies[len(bodies)-1]
}

// teamsCardOf decodes the Adaptive Card of a teams body.
func teamsCardOf(t *testing.T, body []byte) teamsCard {
	t.Helper()
	if err := telltest.CheckTeams(body); err != nil {
		t.Fatalf("Teams would refuse %s: %v", body, err)
	}
	var msg teamsMessage
	if err := json.Unmarshal(body, &msg); err != nil || len(msg.Attachments) != 1 {
		t.Fatalf("body %s: %v, want one attachment", body, err)
	}
	return msg.Attachments[0].Content
}

// cardTexts are what a card shows: each TextBlock's text and each fact's
// title and value.
func cardTexts(c teamsCard) []string {
	var out []string
	for _, e := range c.Body {
		if e.Text != "" {
			out = append(out, e.Text)
		}
		for _, f := range e.Facts {
			out = append(out, f.Title, f.Value)
		}
	}
	return out
}

// googleChatText is the text of a googlechat body.
func googleChatText(t *testing.T, body []byte) string {
	t.Helper()
	if err := telltest.CheckGoogleChat(body); err != nil {
		t.Fatalf("Google Chat would refuse %s: %v", body, err)
	}
	var msg map[string]string
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	return msg["text"]
}

// TestTeamsCard: a Teams Workflows webhook accepts the card, which says
// the outcome, the time in the reader's time zone and locale (the card's
// DATE and TIME functions), the facts, the message, the effects and what
// was reclaimed.
func TestTeamsCard(t *testing.T) {
	card := teamsCardOf(t, sendThrough(t, NotifyTeams, telltest.Teams(t), deleted()))
	got := strings.Join(cardTexts(card), "\n")
	want := strings.Join([]string{
		"nsman: DELETE of namespace e2e-42 succeeded",
		"{{DATE(2026-11-23T17:00:31Z, SHORT)}} {{TIME(2026-11-23T17:00:31Z)}}",
		"Namespace", "e2e-42", "Rule", "ops/e2e-leftovers", "Policy", `"delete after a day"`, "Action", "DELETE", "Result", "succeeded",
		"Reclaimed", "cpu 1500m, memory 2Gi, storage 10Gi, 1 load balancer(s)",
		"TTL 1d elapsed at 2026-11-23T17:00:00Z",
		"delete namespace e2e-42",
	}, "\n")
	if got != want {
		t.Errorf("card shows\n%s\nwant\n%s", got, want)
	}
	if card.Version != "1.4" || card.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" {
		t.Errorf("card version %q, schema %q", card.Version, card.Schema)
	}
	// A notification without a time (none is sent so) has no time block.
	if texts := cardTexts(teamsCardOf(t, mustBody(t, NotifyTeams, deleted(func(n *Notification) { n.Time = time.Time{} })))); strings.Contains(strings.Join(texts, " "), "{{") {
		t.Errorf("card without a time shows %q", texts)
	}
}

// TestGoogleChatText: a Google Chat webhook accepts the text, which says
// the outcome in bold, when (in UTC, saying so), the message, the effects
// and what was reclaimed, a line each.
func TestGoogleChatText(t *testing.T) {
	text := googleChatText(t, sendThrough(t, NotifyGoogleChat, telltest.GoogleChat(t), deleted()))
	want := "*nsman: DELETE of namespace e2e-42 by rule ops/e2e-leftovers (policy \"delete after a day\") succeeded* at 2026-11-23 17:00 UTC: " +
		"TTL 1d elapsed at 2026-11-23T17:00:00Z\ndelete namespace e2e-42\nreclaimed: cpu 1500m, memory 2Gi, storage 10Gi, 1 load balancer(s)"
	if text != want {
		t.Errorf("text\n%s\nwant\n%s", text, want)
	}
	woke := googleChatText(t, mustBody(t, NotifyGoogleChat, deleted(func(n *Notification) { n.Action, n.Woke = policy.ActionSleep, true })))
	if !strings.HasPrefix(woke, "*nsman: SLEEP (wake) of namespace e2e-42") {
		t.Errorf("a wake's text %q does not say so", woke)
	}
}

func mustBody(t *testing.T, format string, n Notification) []byte {
	t.Helper()
	body, err := notificationBody(n, format)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// hostile is what a tenant might write wherever a notification repeats
// it, to reach the channel: mentions of Slack, Google Chat and Teams, a
// link and an image, the markup of each, a character reference, an
// Adaptive Card expression, a line of its own, a list, bidi override.
const hostile = "<!here> <users/all> <at>everyone</at> @channel [Log in](https://evil.example/login) ![x](http://evil.example/p.png) " +
	"<https://evil.example|click> *bold* _it_ ~gone~ `code` &lt;users/all&gt; {{DATE(2026-01-01T00:00:00Z)}} ${secret}\n# Heading\n- item \u202egnp.exe"

// hostileNotification repeats hostile wherever a tenant writes.
func hostileNotification() Notification {
	return deleted(func(n *Notification) {
		n.Manager.Name, n.Policy, n.Message = "m"+hostile, hostile, hostile
		n.Effects = []string{"- " + hostile, "1. " + hostile}
	})
}

// markupIn is what of a shown text Teams or Google Chat could read as
// markup, a mention or a link.
func markupIn(s string) []string {
	var left []string
	for _, raw := range []string{"<", ">", "*", "[", "]", "`", "~", "@channel", "://", "evil.example", "{{", "&lt", "&gt", "\n", "\u202e"} {
		if strings.Contains(s, raw) {
			left = append(left, raw)
		}
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "1.") || strings.HasPrefix(s, "#") {
		left = append(left, "a list or heading")
	}
	for _, edge := range []string{" _", "_ ", "(_", "_)"} {
		if strings.Contains(s, edge) {
			left = append(left, edge)
		}
	}
	return left
}

// TestChatFormatsEscape: in teams and googlechat, what a tenant wrote
// (names, the policy, the message, the effects) is neither markup, nor a
// mention, nor a link, nor a line of its own; it still reads as written.
func TestChatFormatsEscape(t *testing.T) {
	n := hostileNotification()
	t.Run(NotifyTeams, func(t *testing.T) {
		card := teamsCardOf(t, sendThrough(t, NotifyTeams, telltest.Teams(t), n))
		for _, s := range cardTexts(card) {
			if strings.HasPrefix(s, "{{DATE(2026-11-23T17:00:31Z") {
				continue // nsman's own time, in the reader's terms
			}
			if left := markupIn(s); len(left) > 0 {
				t.Errorf("markup %q left in %q", left, s)
			}
		}
		if got := strings.Join(cardTexts(card), "\n"); !strings.Contains(got, "‹at›everyone‹/at› @\u200bchannel ［Log in］(https:\u200b//evil.\u200bexample/login)") {
			t.Errorf("the message does not read as written:\n%s", got)
		}
	})
	t.Run(NotifyGoogleChat, func(t *testing.T) {
		text := googleChatText(t, sendThrough(t, NotifyGoogleChat, telltest.GoogleChat(t), n))
		lines := strings.Split(text, "\n")
		if len(lines) != 1+len(n.Effects)+1 {
			t.Fatalf("text has %d lines, want the sentence, an effect each and reclaimed:\n%s", len(lines), text)
		}
		// nsman's own bold is the sentence's, whole.
		sentence, rest, ok := strings.Cut(strings.TrimPrefix(lines[0], "*"), "* at 2026-11-23 17:00 UTC: ")
		if !strings.HasPrefix(lines[0], "*nsman: ") || !ok {
			t.Fatalf("first line %q: want the sentence in bold, then the time", lines[0])
		}
		for _, s := range append([]string{sentence, rest}, lines[1:]...) {
			if left := markupIn(s); len(left) > 0 {
				t.Errorf("markup %q left in %q", left, s)
			}
		}
		if !strings.Contains(rest, "‹users/all› ‹at›everyone‹/at› @\u200bchannel") {
			t.Errorf("the message does not read as written: %q", rest)
		}
	})
}

// TestChatFormatsLeaveOutAnnotationValues: teams and googlechat say that an
// annotation was ignored, never what it said, as slack does.
func TestChatFormatsLeaveOutAnnotationValues(t *testing.T) {
	n := deleted(func(n *Notification) {
		n.Message = fmt.Sprintf("annotation %s: %q: ignored", policy.TouchedAnnotation, "Log in at evil.example")
	})
	for _, format := range []string{NotifyTeams, NotifyGoogleChat} {
		body := string(mustBody(t, format, n))
		if strings.Contains(body, "Log in") || !strings.Contains(body, ": its value: ignored") {
			t.Errorf("%s shows the annotation's value, or does not say it was left out:\n%s", format, body)
		}
	}
}

// TestTeamsCardCut: a card that would be over Teams' 28 KB is cut, the
// effects first, then the message, saying so; Teams accepts it.
func TestTeamsCardCut(t *testing.T) {
	long := strings.Repeat("scale deployment team-a/web-\"quoted\" ", 3)
	for _, tt := range []struct {
		name     string
		mutate   func(*Notification)
		wantNote string
	}{
		{"many effects", func(n *Notification) {
			n.Effects = nil
			for i := range 2000 {
				n.Effects = append(n.Effects, fmt.Sprintf("%s%d", long, i))
			}
		}, "Cut to stay under Teams' 28 KB: 1"},
		{"a long message", func(n *Notification) { n.Message = strings.Repeat("a \"long\" message ", 3000) }, "Cut to stay under Teams' 28 KB: the message's end not shown."},
		{"both", func(n *Notification) {
			n.Message = strings.Repeat("x", 40000)
			n.Effects = []string{long, long}
		}, "Cut to stay under Teams' 28 KB: the message's end not shown."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := sendThrough(t, NotifyTeams, telltest.Teams(t), deleted(tt.mutate))
			if len(body) > teamsMaxBody {
				t.Errorf("body of %d bytes, over %d", len(body), teamsMaxBody)
			}
			card := teamsCardOf(t, body)
			if last := card.Body[len(card.Body)-1]; !strings.HasPrefix(last.Text, tt.wantNote) || !last.IsSubtle {
				t.Errorf("last block %+v, want a note beginning %q", last, tt.wantNote)
			}
			if texts := cardTexts(card); texts[0] != "nsman: DELETE of namespace e2e-42 succeeded" {
				t.Errorf("cut card begins %q", texts[0])
			}
		})
	}
	// A card under the bound is not cut.
	if texts := cardTexts(teamsCardOf(t, mustBody(t, NotifyTeams, deleted()))); strings.Contains(strings.Join(texts, " "), "Cut") {
		t.Errorf("a small card says it was cut: %q", texts)
	}
}

// TestGoogleChatTextCut: a text over Google Chat's 4,096 characters
// (counted as UTF-16 units: an emoji is two) is cut to them, saying so.
func TestGoogleChatTextCut(t *testing.T) {
	for _, message := range []string{strings.Repeat("m", 5000), strings.Repeat("🙂", 3000), strings.Repeat("x", 3000)} {
		text := googleChatText(t, sendThrough(t, NotifyGoogleChat, telltest.GoogleChat(t), deleted(func(n *Notification) { n.Message = message })))
		units := len(utf16.Encode([]rune(text)))
		cut := strings.HasSuffix(text, googleChatCutNote)
		if units > googleChatMaxText || cut != (len(utf16.Encode([]rune(message))) > 3000) {
			t.Errorf("message of %d runes: text of %d UTF-16 units, cut %t", len([]rune(message)), units, cut)
		}
	}
}

// TestDueIn: a due time in the reader's terms, relative and exact.
func TestDueIn(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   time.Duration
		want string
	}{
		{2 * time.Hour, "in 2 hours (2026-12-03 14:00 UTC)"},
		{time.Hour + 59*time.Minute + 40*time.Second, "in 2 hours (2026-12-03 13:59 UTC)"},
		{time.Hour, "in 1 hour (2026-12-03 13:00 UTC)"},
		{45 * time.Minute, "in 45 minutes (2026-12-03 12:45 UTC)"},
		{59*time.Minute + 50*time.Second, "in 1 hour (2026-12-03 12:59 UTC)"},
		{90 * time.Second, "in 2 minutes (2026-12-03 12:01 UTC)"},
		{40 * time.Second, "in 1 minute (2026-12-03 12:00 UTC)"},
		{10 * time.Second, "now (2026-12-03 12:00 UTC)"},
		{47 * time.Hour, "in 47 hours (2026-12-05 11:00 UTC)"},
		{48 * time.Hour, "in 2 days (2026-12-05 12:00 UTC)"},
		{7*24*time.Hour + 3*time.Hour, "in 7 days (2026-12-10 15:00 UTC)"},
		{-3 * time.Hour, "3 hours ago (2026-12-03 09:00 UTC)"},
	} {
		if got := DueIn(now.Add(tt.in), now); got != tt.want {
			t.Errorf("DueIn(now+%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// A due time in another zone is shown in UTC.
	berlin := time.FixedZone("CET", 3600)
	if got := DueIn(time.Date(2026, 12, 3, 15, 0, 0, 0, berlin), now); got != "in 2 hours (2026-12-03 14:00 UTC)" {
		t.Errorf("DueIn in CET = %q", got)
	}
}

// TestStandInsRefuseWhatTheServicesRefuse: the stand-ins check what the
// services document, so that a body they accept is one the service would.
func TestStandInsRefuseWhatTheServicesRefuse(t *testing.T) {
	good := string(mustBody(t, NotifyTeams, deleted()))
	if err := telltest.CheckTeams([]byte(good)); err != nil {
		t.Fatalf("a good card refused: %v", err)
	}
	for name, body := range map[string]string{
		"version 1.6":       strings.Replace(good, `"version":"1.4"`, `"version":"1.6"`, 1),
		"a number version":  strings.Replace(good, `"version":"1.4"`, `"version":1.4`, 1),
		"no contentUrl":     strings.Replace(good, `"contentUrl":null,`, ``, 1),
		"another schema":    strings.Replace(good, `adaptive-card.json`, `card.json`, 1),
		"another type":      strings.Replace(good, `"type":"message"`, `"type":"MessageCard"`, 1),
		"a card of another": strings.Replace(good, `application/vnd.microsoft.card.adaptive`, `application/vnd.microsoft.card.hero`, 1),
		"no text":           strings.Replace(good, `"text":"nsman: DELETE of namespace e2e-42 succeeded",`, ``, 1),
		"an unknown field":  strings.Replace(good, `"wrap":true`, `"wrap":true,"colour":"red"`, 1),
		"wrap as a string":  strings.Replace(good, `"wrap":true`, `"wrap":"true"`, 1),
		"a fact's value":    strings.Replace(good, `,"value":"e2e-42"`, ``, 1),
		"over 28 KB":        strings.Replace(good, `"text":"nsman: `, `"text":"`+strings.Repeat("x", 28*1024), 1),
	} {
		if body == good {
			t.Fatalf("%s: the replacement changed nothing", name)
		}
		if err := telltest.CheckTeams([]byte(body)); err == nil {
			t.Errorf("Teams stand-in accepts a card with %s", name)
		}
	}
	for name, body := range map[string]string{
		"no text":          `{}`,
		"an empty text":    `{"text":""}`,
		"a number":         `{"text":1}`,
		"an unknown field": `{"text":"x","colour":"red"}`,
		"4,097 characters": `{"text":"` + strings.Repeat("x", 4097) + `"}`,
		"2,049 emoji":      `{"text":"` + strings.Repeat("🙂", 2049) + `"}`,
		"two values":       `{"text":"x"}{"text":"y"}`,
	} {
		if err := telltest.CheckGoogleChat([]byte(body)); err == nil {
			t.Errorf("Google Chat stand-in accepts a message with %s", name)
		}
	}
	if err := telltest.CheckGoogleChat([]byte(`{"text":"` + strings.Repeat("🙂", 2048) + `"}`)); err != nil {
		t.Errorf("Google Chat stand-in refuses 4,096 characters: %v", err)
	}
}

// A warning (event dueSoon) is worded by every chat format as what will
// happen, and when in the reader's terms.
func TestChatPartsOfDueSoon(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	due := now.Add(2 * time.Hour)
	n := Notification{Manager: NotificationManager{Namespace: "team-a", Name: "preview"}, Target: "preview-1", Policy: "ttl", Action: "DELETE",
		Result: ResultPending, Event: EventDueSoon, Due: &due, Time: now}
	p := chatPartsOf(n, func(s string) string { return s })
	if want := `nsman: manager team-a/preview will DELETE namespace preview-1 in 2 hours (2026-12-03 14:00 UTC) (policy "ttl")`; p.Sentence != want {
		t.Errorf("sentence %q, want %q", p.Sentence, want)
	}
	if want := "due in 2 hours (2026-12-03 14:00 UTC)"; p.Result != want {
		t.Errorf("result %q, want %q", p.Result, want)
	}
}
