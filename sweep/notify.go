package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nsman/nsman/policy"
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

// notifier sends the notifications of Config.NotifyURL in one format.
type notifier struct {
	url, format string
}

// notify sends the notification of the outcome of plan p's action, when
// the sweep has a notifier; a failure is told once. Its Idempotency-Key is
// derived from the firing's and the result: the same outcome, told again by
// a sweep completing a claim, carries the same key. A notification that
// fails is logged and counted; it changes nothing else.
func (s *Sweeper) notify(ctx context.Context, r *sweepRun, m policy.Manager, p *plan, effects []string, actionErr error, failedBefore bool) {
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
	body, err := notificationBody(n, s.notifier.format)
	if err == nil {
		err = s.writer.post(ctx, s.notifier.url, body, digest("%s/%s", firingKey(m, p), result))
	}
	if err != nil {
		r.notifyFailed.Add(1)
		s.log.Error("notification not delivered", "manager", m.Namespace+"/"+m.Name, "namespace", p.target.name, "policy", p.policy.Name, "error", err.Error())
		return
	}
	r.notifySent.Add(1)
}

// notificationBody renders n as json, or as a {"text": ...} body that Slack
// and Mattermost incoming webhooks accept.
func notificationBody(n Notification, format string) ([]byte, error) {
	if format != NotifySlack {
		return json.Marshal(n)
	}
	kind := "manager"
	if n.Rule {
		kind = "rule"
	}
	text := fmt.Sprintf("nsman: %s of namespace %s by %s %s/%s (policy %q) %s", n.Action, n.Target, kind, n.Manager.Namespace, n.Manager.Name, n.Policy, n.Result)
	if n.Message != "" {
		text += ": " + n.Message
	}
	if len(n.Effects) > 0 {
		text += "\n" + strings.Join(n.Effects, "\n")
	}
	return json.Marshal(map[string]string{"text": text})
}
