package tell

import (
	"fmt"
	"strconv"
)

// chatParts is what a chat format (slack, teams, googlechat) says of a
// notification, worded once for all of them, with what a tenant wrote
// already passed through the format's escape: each format only lays the
// parts out in its receiver's shape. An event other than an action's
// outcome (a warning before one) adds its words here, not in each format.
type chatParts struct {
	// Sentence is the whole outcome in one line: "nsman: DELETE of
	// namespace preview-1 by manager team-a/preview (policy "ttl")
	// succeeded".
	Sentence string
	// Action ("SLEEP (wake)"), Target, Kind ("manager" or "rule"),
	// Subject (its namespace/name), Policy (quoted) and Result are the
	// sentence's parts, for a format that shows them as facts.
	Action, Target, Kind, Subject, Policy, Result string
	// Message is the notification's message, the values of ignored
	// annotations left out; Effects one entry per effect; Reclaimed what
	// was freed, "" for nothing told.
	Message   string
	Effects   []string
	Reclaimed string
}

// chatPartsOf words n, escaping with esc whatever nsman did not write
// itself.
func chatPartsOf(n Notification, esc func(string) string) chatParts {
	p := chatParts{Kind: "manager", Action: n.Action, Result: n.Result}
	if n.Rule {
		p.Kind = "rule"
	}
	if n.Woke {
		p.Action += " (wake)"
	}
	p.Action, p.Target, p.Policy = esc(p.Action), esc(n.Target), esc(strconv.Quote(n.Policy))
	p.Subject = esc(n.Manager.Namespace) + "/" + esc(n.Manager.Name)
	p.Sentence = fmt.Sprintf("nsman: %s of namespace %s by %s %s (policy %s) %s", p.Action, p.Target, p.Kind, p.Subject, p.Policy, p.Result)
	if n.Message != "" {
		p.Message = esc(withoutAnnotationValues(n.Message))
	}
	for _, e := range n.Effects {
		p.Effects = append(p.Effects, esc(e))
	}
	if n.Reclaimed != nil {
		p.Reclaimed = n.Reclaimed.String()
	}
	return p
}
