package decide

import (
	"fmt"
	"strings"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy/durtext"
	"github.com/nsman/nsman/report"
)

// DefaultMaxHold is how far ahead of now a hold may end; one further is
// ignored, so that nobody keeps a namespace forever with one annotation.
const DefaultMaxHold = 720 * time.Hour

// holdLeeway is how far beyond the maximum a hold may end and still hold:
// nsman hold counts from its own clock, a sweep from the API server's as
// the sweep began.
const holdLeeway = 5 * time.Minute

// Hold is a status.HoldAnnotation, or with Key a status.WakeAnnotation,
// as found on an object: both end at a time, judged alike.
type Hold struct {
	// On names the object: "namespace X" or "manager ns/name".
	On    string
	Value string
	// Key is the annotation, status.HoldAnnotation when empty.
	Key string
}

// key is h's annotation.
func (h Hold) key() string {
	if h.Key == "" {
		return status.HoldAnnotation
	}
	return h.Key
}

// Wake is a status.WakeAnnotation found on object on.
func Wake(on, value string) Hold { return Hold{On: on, Value: value, Key: status.WakeAnnotation} }

// split is holds in two: the holds, and the wakes.
func split(holds []Hold) (held, woken []Hold) {
	for _, h := range holds {
		if h.key() == status.WakeAnnotation {
			woken = append(woken, h)
		} else {
			held = append(held, h)
		}
	}
	return held, woken
}

// Holds is what a pair's or a manager's holds amount to at one time.
type Holds struct {
	// Until is the latest end of the holds in force, zero when none is;
	// By names the object that holds until then.
	Until time.Time
	By    string
	// Ignored says why holds were ignored: unparseable, or ending further
	// ahead than the maximum.
	Ignored string
}

// HoldsAt judges holds (or wakes) at now: a hold that has ended is no
// hold, one that does not parse or ends more than max (and holdLeeway)
// after now is ignored.
func HoldsAt(holds []Hold, now time.Time, max time.Duration) Holds {
	var st Holds
	var ignored []string
	for _, h := range holds {
		if h.Value == "" {
			continue
		}
		until, err := time.Parse(time.RFC3339, h.Value)
		switch {
		case err != nil:
			ignored = append(ignored, fmt.Sprintf("%s on %s is not an RFC 3339 time (%q)", h.key(), h.On, status.Truncate(h.Value, 64)))
		case until.Sub(now) > max+holdLeeway:
			ignored = append(ignored, fmt.Sprintf("%s on %s ends %s, more than --max-hold %s ahead", h.key(), h.On, until.UTC().Format(time.RFC3339), durtext.Format(max)))
		case until.After(now) && until.After(st.Until):
			st.Until, st.By = until.UTC(), h.On
		}
	}
	st.Ignored = strings.Join(ignored, "; ")
	return st
}

// applyHold turns a decision that would act into a waiting one, due no earlier
// than the hold ends, while a hold is in force, and says in every decision
// the hold that keeps it waiting, or the holds ignored.
func applyHold(st Holds, d Decision) Decision {
	held := fmt.Sprintf("%s is held until %s (%s)", st.By, st.Until.Format(time.RFC3339), status.HoldAnnotation)
	until := st.Until
	if !until.IsZero() {
		d.Entry.HeldUntil = &until
	}
	switch {
	case until.IsZero():
	case d.Plan != nil && d.Plan.Step == StepAct:
		d.Entry.State, d.Entry.Message = report.StateWaiting, fmt.Sprintf("policy %q holds, but %s", d.Plan.Policy.Name, held)
		switch {
		case d.Plan.Wake:
			d.Entry.State, d.Entry.Message = report.StateAsleep, fmt.Sprintf("policy %q would wake the namespace, but %s", d.Plan.Policy.Name, held)
		case d.Plan.Resleep:
			d.Entry.State, d.Entry.Message = report.StateAsleep, fmt.Sprintf("%s, but %s", strings.TrimSuffix(d.Plan.Reason, "; back to sleep"), held)
		}
		d.Entry.Policy, d.Entry.Action, d.Entry.Due = "", "", &until
		d.Plan = nil
	case d.Entry.State == report.StateWaiting || d.Entry.State == report.StateAsleep:
		d.Entry.Message += "; " + held
		if d.Entry.Due != nil && d.Entry.Due.Before(until) {
			d.Entry.Due = &until
		}
	}
	if d.Entry.HoldIgnored = st.Ignored; st.Ignored != "" {
		d.Entry.Message += "; hold ignored: " + st.Ignored
	}
	return d
}
