package sweep

import (
	"fmt"
	"strings"
	"time"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// DefaultMaxHold is how far ahead of now a hold may end; one further is
// ignored, so that nobody keeps a namespace forever with one annotation.
const DefaultMaxHold = 720 * time.Hour

// holdLeeway is how far beyond the maximum a hold may end and still hold:
// nsman hold counts from its own clock, a sweep from the API server's as
// the sweep began.
const holdLeeway = 5 * time.Minute

// hold is a HoldAnnotation as found on an object.
type hold struct {
	// on names the object: "namespace X" or "manager ns/name".
	on    string
	value string
}

// holdState is what a pair's or a manager's holds amount to at one time.
type holdState struct {
	// until is the latest end of the holds in force, zero when none is;
	// by names the object that holds until then.
	until time.Time
	by    string
	// ignored says why holds were ignored: unparseable, or ending further
	// ahead than the maximum.
	ignored string
}

// holdsAt judges holds at now: a hold that has ended is no hold, one that
// does not parse or ends more than max (and holdLeeway) after now is
// ignored.
func holdsAt(holds []hold, now time.Time, max time.Duration) holdState {
	var st holdState
	var ignored []string
	for _, h := range holds {
		if h.value == "" {
			continue
		}
		until, err := time.Parse(time.RFC3339, h.value)
		switch {
		case err != nil:
			ignored = append(ignored, fmt.Sprintf("%s on %s is not an RFC 3339 time (%q)", status.HoldAnnotation, h.on, status.Truncate(h.value, 64)))
		case until.Sub(now) > max+holdLeeway:
			ignored = append(ignored, fmt.Sprintf("%s on %s ends %s, more than --max-hold %s ahead", status.HoldAnnotation, h.on, until.UTC().Format(time.RFC3339), max))
		case until.After(now) && until.After(st.until):
			st.until, st.by = until.UTC(), h.on
		}
	}
	st.ignored = strings.Join(ignored, "; ")
	return st
}

// apply turns a decision that would act into a waiting one, due no earlier
// than the hold ends, while a hold is in force, and says in every decision
// the hold that keeps it waiting, or the holds ignored.
func (st holdState) apply(d decision) decision {
	held := fmt.Sprintf("%s is held until %s (%s)", st.by, st.until.Format(time.RFC3339), status.HoldAnnotation)
	until := st.until
	if !until.IsZero() {
		d.entry.HeldUntil = &until
	}
	switch {
	case until.IsZero():
	case d.plan != nil && d.plan.step == stepAct:
		d.entry.State, d.entry.Message = report.StateWaiting, fmt.Sprintf("policy %q holds, but %s", d.plan.policy.Name, held)
		d.entry.Policy, d.entry.Action, d.entry.Due = "", "", &until
		d.plan = nil
	case d.entry.State == report.StateWaiting:
		d.entry.Message += "; " + held
		if d.entry.Due != nil && d.entry.Due.Before(until) {
			d.entry.Due = &until
		}
	}
	if d.entry.HoldIgnored = st.ignored; st.ignored != "" {
		d.entry.Message += "; hold ignored: " + st.ignored
	}
	return d
}
