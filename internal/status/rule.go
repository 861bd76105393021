package status

import (
	"encoding/json"
	"time"

	"github.com/nsman/nsman/report"
)

// MaxLatest bounds the latest actions a rule's status lists.
const MaxLatest = 10

// RuleSummary is what a rule's status says about the namespaces it
// matches. Its size does not grow with their number.
type RuleSummary struct {
	// Matched counts the namespaces the rule matches, those governed by a
	// single-target manager included.
	Matched int `json:"matched"`
	// States counts the matched namespaces by the state the last sweep
	// found them in. With --shard-count above 1, only the pairs of the
	// shard that owns the rule are counted.
	States map[report.State]int `json:"states,omitempty"`
	// Latest lists the rule's latest actions, newest first, at most 10.
	Latest []PairAction `json:"latest,omitempty"`
	// Stuck lists the namespaces the rule would delete that are stuck in
	// Terminating, at most 10, by name.
	Stuck []StuckNamespace `json:"stuck,omitempty"`
}

// StuckNamespace is a namespace stuck in Terminating, and why.
type StuckNamespace struct {
	Namespace string `json:"namespace"`
	report.Stuck
}

// PairAction is one action a rule took on one namespace.
type PairAction struct {
	Namespace string    `json:"namespace"`
	Policy    string    `json:"policy"`
	Action    string    `json:"action"`
	Result    string    `json:"result"`
	Time      time.Time `json:"time"`
	// Reclaimed is what a DELETE or SCALE_DOWN that succeeded freed.
	Reclaimed *report.Reclaimed `json:"reclaimed,omitempty"`
}

// StateWatching is a rule's state in its status; never in a report.
const StateWatching report.State = "watching"

// PairStatus is a rule's record of one namespace, which lives on the
// namespace: a namespace recreated under the same name starts afresh.
type PairStatus struct {
	// Rule names the rule, namespace/name, for whoever reads the namespace.
	Rule string `json:"rule"`
	Progress
	// Spec identifies the spec of ObservedGeneration apart from
	// spec.deactivated (policy.Manager.Arming): pausing and resuming a rule
	// re-arms nothing.
	Spec string `json:"spec,omitempty"`
	// Written dates a record that holds no other time, for a rule that is
	// gone (see record.Stale).
	Written *time.Time `json:"written,omitempty"`
}

// DecodePair decodes a pair's record; one that does not decode (edited by
// hand) counts as absent.
func DecodePair(raw string) PairStatus {
	var st PairStatus
	if raw != "" && json.Unmarshal([]byte(raw), &st) != nil {
		return PairStatus{}
	}
	return st
}

// LastTime is the latest time the record holds: of its claim, its last
// action, its minChecks progress, its stages, or when it was written.
func (p PairStatus) LastTime() time.Time {
	var last time.Time
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	if p.Written != nil {
		later(*p.Written)
	}
	if p.Claim != nil {
		later(p.Claim.Expires)
	}
	if p.LastAction != nil {
		later(p.LastAction.Time)
	}
	for _, c := range p.Checks {
		later(c.Last)
	}
	for _, f := range p.Fired {
		later(f.Time)
	}
	return last
}
