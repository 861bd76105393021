package tell

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
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
	// Woke: the action was a SLEEP policy's wake, not its sleep.
	Woke bool `json:"woke,omitempty"`
	// Links are the signed links that let the namespace's people extend
	// or wake it (a SLEEP's sleep, with --links-url; see Linker).
	Links []Link `json:"links,omitempty"`
	// Event is EventDueSoon for a warning (policies[].warnBefore): the
	// action is due at Due and has not happened; empty for an outcome.
	Event string     `json:"event,omitempty"`
	Due   *time.Time `json:"due,omitempty"`
	// Reclaimed is what a DELETE or SCALE_DOWN freed.
	Reclaimed *report.Reclaimed `json:"reclaimed,omitempty"`
	// Time is the sweep's time (the API server's).
	Time    time.Time `json:"time"`
	Sweep   string    `json:"sweep"`
	Version string    `json:"version"`
}

// EventDueSoon is a Notification's Event for a warning before an action,
// whose Result is ResultPending: the action has not happened.
const (
	EventDueSoon  = "dueSoon"
	ResultPending = "pending"
)

// NotificationManager names a manager in a Notification.
type NotificationManager struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Notifier sends the notifications of Config.NotifyURL in one format,
// through its own sender (signed with Config.NotifySigningKey when set). A
// dry run has none: it sends nothing.
type Notifier struct {
	url    string
	format Format
	sender *webhook.Sender
	// channels are the platform's other channels, by name (see Route).
	channels map[string]*Notifier
}

// NewNotifier sends to rawURL in the format called format (DefaultFormat
// for a name no format has: Config.Validate refuses one).
func NewNotifier(rawURL, format string, sender *webhook.Sender) *Notifier {
	f, err := LookupFormat(format)
	if err != nil {
		f = formats[0]
	}
	return &Notifier{url: rawURL, format: f, sender: sender}
}

// Redact is err's message with the notification URL cut down to its scheme
// and host (RedactError): a Slack or Mattermost incoming-webhook URL is a
// credential, its path the secret, and the webhook package quotes the URL
// in full (but a password).
func (n *Notifier) Redact(err error) string { return RedactError(n.url, "notification", err) }

// RedactError is err's message with rawURL, wherever it quotes it (as
// given, or as url.URL renders it, password masked or not), cut down to its
// scheme and host (RedactURL). A message that would still name the URL's
// path, query or user after that says only that what, to where, failed.
func RedactError(rawURL, what string, err error) string {
	shown := RedactURL(rawURL)
	hidden := []string{rawURL}
	u, perr := url.Parse(rawURL)
	if perr == nil {
		hidden = append(hidden, u.String(), u.Redacted())
	}
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	msg := err.Error()
	for _, h := range hidden {
		msg = strings.ReplaceAll(msg, h, shown)
	}
	if perr == nil {
		for _, secret := range []string{strings.TrimSuffix(u.EscapedPath(), "/"), u.RawQuery, u.Fragment, u.User.String()} {
			if secret != "" && strings.Contains(msg, secret) {
				return what + " to " + shown + " failed (the error named the URL, and is not shown)"
			}
		}
	}
	return msg
}

// Send sends notification n in n's format, with idempotencyKey.
func (n *Notifier) Send(ctx context.Context, note Notification, idempotencyKey string) error {
	body, err := n.format.Body(note)
	if err != nil {
		return err
	}
	_, err = n.sender.Send(ctx, n.url, body, idempotencyKey)
	return err
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

// quotedAnnotations are the annotations of a namespace whose value a
// message quotes when it does not parse (see policy.ParseTouched and
// policy.ParseExpiry), after "annotation <key>: ".
var quotedAnnotations = []string{policy.TouchedAnnotation, policy.ExpiresAnnotation}

// withoutAnnotationValues is msg with the values of quotedAnnotations it
// quotes replaced by "its value": whoever annotates a namespace chooses
// them, and a channel is told that the annotation was ignored, not what it
// said. A quote that does not end (the message was cut) takes the rest of
// the message with it.
func withoutAnnotationValues(msg string) string {
	for _, key := range quotedAnnotations {
		marker := "annotation " + key + ": "
		var out strings.Builder
		rest := msg
		for {
			i := strings.Index(rest, marker)
			if i < 0 || !strings.HasPrefix(rest[i+len(marker):], `"`) {
				out.WriteString(rest)
				break
			}
			out.WriteString(rest[:i+len(marker)])
			rest = rest[i+len(marker):]
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				out.WriteString("its value (not shown)")
				break
			}
			out.WriteString("its value")
			rest = rest[len(quoted):]
		}
		msg = out.String()
	}
	return msg
}
