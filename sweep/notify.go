package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/webhook"
)

// Notification formats (--notify-format).
const (
	NotifyJSON  = "json"
	NotifySlack = "slack"
)

// Notification is what --notify-url receives after every action that fired
// or failed, in the json format.
type Notification struct {
	// Manager names the manager, or the rule.
	Manager NotificationManager `json:"manager"`
	// Rule: the manager is a rule, and Target one of its namespaces.
	Rule    bool     `json:"rule,omitempty"`
	Target  string   `json:"target"`
	Policy  string   `json:"policy"`
	Action  string   `json:"action"`
	Result  string   `json:"result"`
	Message string   `json:"message,omitempty"`
	Effects []string `json:"effects,omitempty"`
	// Reclaimed is what a DELETE or SCALE_DOWN freed.
	Reclaimed *Reclaimed `json:"reclaimed,omitempty"`
	// Time is the sweep's time (the API server's).
	Time    time.Time `json:"time"`
	Sweep   string    `json:"sweep"`
	Version string    `json:"version"`
}

// NotificationManager names a manager in a Notification.
type NotificationManager struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// notifier sends the notifications of Config.NotifyURL in one format,
// through its own sender (signed with Config.NotifySigningKey when set). A
// dry run has none: it sends nothing.
type notifier struct {
	url, format string
	sender      *webhook.Sender
	// hidden are the forms of url that an error may quote (as given, and
	// as url.URL renders it, password masked or not), longest first; shown
	// is what errors say instead (RedactURL).
	hidden []string
	shown  string
}

func newNotifier(rawURL, format string, sender *webhook.Sender) *notifier {
	n := &notifier{url: rawURL, format: format, sender: sender, hidden: []string{rawURL}, shown: RedactURL(rawURL)}
	if u, err := url.Parse(rawURL); err == nil {
		n.hidden = append(n.hidden, u.String(), u.Redacted())
	}
	slices.SortFunc(n.hidden, func(a, b string) int { return len(b) - len(a) })
	return n
}

// redact is err's message with the notification URL cut down to its scheme
// and host: a Slack or Mattermost incoming-webhook URL is a credential,
// its path the secret, and the webhook package quotes the URL in full (but
// a password). A message that would still name the URL's path, query or
// user after that says only where and that it failed.
func (n *notifier) redact(err error) string {
	msg := err.Error()
	for _, h := range n.hidden {
		msg = strings.ReplaceAll(msg, h, n.shown)
	}
	if u, perr := url.Parse(n.url); perr == nil {
		for _, secret := range []string{strings.TrimSuffix(u.EscapedPath(), "/"), u.RawQuery, u.Fragment, u.User.String()} {
			if secret != "" && strings.Contains(msg, secret) {
				return "notification to " + n.shown + " failed (the error named the URL, and is not shown)"
			}
		}
	}
	return msg
}

// RedactURL renders a URL as its scheme and host alone, followed by "/…"
// when there was more (a path, a query, a fragment, a user): what logs,
// reports and errors may show of a URL that is a credential, such as a
// Slack incoming webhook's. Anything that does not parse as an absolute URL
// with a host is shown as "(a URL that is not shown)".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(a URL that is not shown)"
	}
	shown := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" || u.ForceQuery {
		shown += "/…"
	}
	return shown
}

// notify sends the notification of the outcome of plan p's action, when
// the sweep has a notifier; a failure is told once. Its Idempotency-Key is
// derived from the firing's and the result: the same outcome, told again by
// a sweep completing a claim, carries the same key. A notification that
// fails is logged, without the URL's path, and counted; it changes nothing
// else.
func (s *Sweeper) notify(ctx context.Context, r *sweepRun, m policy.Manager, p *plan, effects []string, reclaimed *Reclaimed, actionErr error, failedBefore bool) {
	if s.notifier == nil || actionErr != nil && failedBefore {
		return
	}
	result, message := ResultSucceeded, p.reason
	if actionErr != nil {
		result, message = ResultFailed, actionErr.Error()
	}
	n := Notification{
		Manager: NotificationManager{Namespace: m.Namespace, Name: m.Name}, Rule: m.Rule != nil, Target: p.target.name,
		Policy: p.policy.Name, Action: p.policy.Action.Type, Result: result, Message: truncate(message, maxMessage), Effects: effects,
		Time: r.now.UTC(), Sweep: s.cfg.SweepID, Version: s.cfg.Version,
	}
	n.Reclaimed = reclaimed // a SCALE_DOWN that failed part-way freed what it scaled
	body, err := notificationBody(n, s.notifier.format)
	if err == nil {
		_, err = s.notifier.sender.Send(ctx, s.notifier.url, body, digest("%s/%s", firingKey(m, p), result))
	}
	if err != nil {
		r.notifyFailed.Add(1)
		s.log.Error("notification not delivered", "manager", m.Namespace+"/"+m.Name, "namespace", p.target.name, "policy", p.policy.Name, "error", s.notifier.redact(err))
		return
	}
	r.notifySent.Add(1)
}

// notificationBody renders n as json, or as a {"text": ...} body that Slack
// and Mattermost incoming webhooks accept. In the text, whatever nsman did
// not write itself (names, the message, the effects) is escaped as Slack
// asks (&, <, >), and an @ is no mention for Mattermost, so that nobody
// who names a manager or answers a webhook can ping a channel or hide a
// link in it. A webhook's failure carries its
// status code alone: the webhook package never quotes a reason phrase.
func notificationBody(n Notification, format string) ([]byte, error) {
	if format != NotifySlack {
		return json.Marshal(n)
	}
	kind := "manager"
	if n.Rule {
		kind = "rule"
	}
	text := fmt.Sprintf("nsman: %s of namespace %s by %s %s/%s (policy %s) %s",
		slackEscape(n.Action), slackEscape(n.Target), kind, slackEscape(n.Manager.Namespace), slackEscape(n.Manager.Name), slackEscape(strconv.Quote(n.Policy)), n.Result)
	if n.Message != "" {
		text += ": " + slackEscape(n.Message)
	}
	for _, e := range n.Effects {
		text += "\n" + slackEscape(e)
	}
	if n.Reclaimed != nil {
		text += "\nreclaimed: " + n.Reclaimed.String()
	}
	return json.Marshal(map[string]string{"text": text})
}

// slackEscape escapes the three characters Slack gives a meaning in
// message text: < and > make mentions (<!channel>) and links, & escapes;
// and it puts a zero-width space after each @, which Mattermost would
// read as a mention (@channel, @here, @all, @someone).
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u200b").Replace
