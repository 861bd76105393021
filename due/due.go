package due

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/nsman/nsman/report"
)

// Version is the schema of List's JSON form.
const Version = "nsman.due/v1"

// What puts an action off past its due time: Delay.By.
const (
	ByHold    = "hold"
	ByWindow  = "window"
	ByFreeze  = "freeze"
	ByBackoff = "backoff"
	// ByCondition: at its due time the condition waits again (an IDLE
	// namespace's activity, say), until a later time.
	ByCondition = "condition"
)

// maxDelays bounds the dry runs one subject is followed through: a delay
// that leads to another is told up to this many times.
const maxDelays = 3

// Delay is what puts an action off past its due time, and until when.
type Delay struct {
	By    string    `json:"by"`
	Until time.Time `json:"until"`
}

// Item is a subject (a manager, or a namespace of a rule) due soon.
type Item struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Rule      bool   `json:"rule,omitempty"`
	Target    string `json:"target,omitempty"`
	// Policy and Action are those that act, once a dry run says; before,
	// the policy due first.
	Policy string `json:"policy,omitempty"`
	Action string `json:"action,omitempty"`
	// Due is when the policy comes due by time alone, delays aside.
	Due time.Time `json:"due"`
	// ActsAt is when a dry run acts, delays counted; nil when none of
	// those made did (Reason says why).
	ActsAt    *time.Time `json:"actsAt,omitempty"`
	DelayedBy []Delay    `json:"delayedBy,omitempty"`
	// Reason is what the last dry run said of the subject.
	Reason string `json:"reason,omitempty"`

	// next is when it is to be evaluated again; zero once told.
	next time.Time
}

// List is what nsman due prints.
type List struct {
	Version string `json:"version"`
	// Now is the time of the first dry run, the API server's.
	Now           time.Time `json:"now"`
	WithinSeconds int64     `json:"withinSeconds"`
	Items         []Item    `json:"due"`
	// Failed says what the first dry run could not evaluate, a line each
	// (namespace/name: why): what is due of it is not known.
	Failed []string `json:"failed,omitempty"`
}

// lookahead follows the subjects due within a time through dry runs.
type lookahead struct {
	now    time.Time
	within time.Duration
	items  []Item
	failed []string
}

// waits are the states of a subject that waits for a time.
var waits = []report.State{report.StateWaiting, report.StateAsleep, report.StateDeferred}

// start takes the subjects of rep, a dry run's report now, that act now or
// are due within within.
func start(rep report.Report, within time.Duration) *lookahead {
	l := &lookahead{now: rep.Summary.Now, within: within}
	until := l.now.Add(within)
	for _, e := range rep.Entries {
		if it, ok := first(e, l.now, rep.Summary.FrozenUntil); ok && !it.Due.After(until) {
			l.items = append(l.items, it)
		}
		if e.State == report.StateFailed {
			l.failed = append(l.failed, e.Namespace+"/"+e.Name+": "+e.Message)
		}
	}
	if rep.Summary.ListError != "" {
		l.failed = append(l.failed, rep.Summary.ListError)
	}
	return l
}

// first is the item of entry e of the dry run at now, when it acts then or
// waits for a time: due when its policy comes due, delays aside (a hold or
// a window that already put e's due time off, a freeze it is in, a
// webhook's backoff), to be evaluated again when e is due.
func first(e report.Entry, now time.Time, frozenUntil *time.Time) (Item, bool) {
	it := Item{Namespace: e.Namespace, Name: e.Name, Rule: e.Rule, Target: e.Target, Policy: e.Policy, Action: e.Action, Reason: e.Message}
	switch {
	case e.State == report.StatePlanned:
		it.Due, it.ActsAt = now, &now
		return it, true
	case e.Due == nil || !slices.Contains(waits, e.State):
		return it, false
	}
	due := *e.Due
	it.Due, it.next = due, due
	policy, c := conditionDue(e, now)
	it.Policy = cmp.Or(it.Policy, policy)
	switch {
	case e.State == report.StateDeferred:
		it.Due, it.DelayedBy = now, []Delay{{By: ByBackoff, Until: due}}
	case frozenUntil != nil && due.Equal(*frozenUntil) && e.Policy != "":
		it.Due, it.DelayedBy = now, []Delay{{By: ByFreeze, Until: due}}
	case e.HeldUntil != nil && due.Equal(*e.HeldUntil) && !c.IsZero() && c.Before(due):
		it.Due, it.DelayedBy = c, []Delay{{By: ByHold, Until: due}}
	case windowed(e, due) != nil:
		it.Due, it.DelayedBy = *windowed(e, due), []Delay{{By: ByWindow, Until: due}}
	}
	return it, true
}

// conditionDue is the policy of e due first, delays aside, and when: now
// for one that holds (but for its windows), else its due time, before its
// windows put it off.
func conditionDue(e report.Entry, now time.Time) (string, time.Time) {
	var policy string
	var first time.Time
	for _, c := range e.Conditions {
		var at time.Time
		switch {
		case c.OutsideWindows != nil:
			at = *c.OutsideWindows
		case c.Holds:
			at = now
		case c.Due != nil:
			at = *c.Due
		default:
			continue
		}
		if first.IsZero() || at.Before(first) {
			policy, first = c.Policy, at
		}
	}
	return policy, first
}

// windowed is when the condition of e that comes due at due comes due
// while its windows are closed, nil when none does.
func windowed(e report.Entry, due time.Time) *time.Time {
	for _, c := range e.Conditions {
		if c.OutsideWindows != nil && c.Due != nil && c.Due.Equal(due) {
			return c.OutsideWindows
		}
	}
	return nil
}

// pending is the times items wait to be evaluated at, earliest first.
func (l *lookahead) pending() []time.Time {
	var times []time.Time
	for _, it := range l.items {
		if !it.next.IsZero() && !slices.ContainsFunc(times, it.next.Equal) {
			times = append(times, it.next)
		}
	}
	slices.SortFunc(times, time.Time.Compare)
	return times
}

// key names a subject in a report.
type key struct{ namespace, name, target string }

// at takes rep, the report of a dry run at t: each item due then acts, or
// is put off again (a freeze then, a hold that lasts, a condition that
// waits again) and is evaluated again when that ends, up to maxDelays.
func (l *lookahead) at(t time.Time, rep report.Report) {
	entries := make(map[key]report.Entry, len(rep.Entries))
	for _, e := range rep.Entries {
		entries[key{e.Namespace, e.Name, e.Target}] = e
	}
	for i := range l.items {
		it := &l.items[i]
		if !it.next.Equal(t) {
			continue
		}
		it.next = time.Time{}
		e, ok := entries[key{it.Namespace, it.Name, it.Target}]
		switch {
		case !ok:
			it.Reason = "not in the dry run at " + stamp(t)
			continue
		case e.Policy != "":
			it.Policy, it.Action = e.Policy, e.Action
		}
		it.Reason = e.Message
		switch {
		case e.State == report.StatePlanned:
			it.ActsAt = &t
		case e.Due != nil && e.Due.After(t) && slices.Contains(waits, e.State) && len(it.DelayedBy) < maxDelays:
			it.DelayedBy = append(it.DelayedBy, Delay{By: delayedBy(e, *e.Due, rep.Summary.FrozenUntil), Until: *e.Due})
			it.next = *e.Due
		}
	}
}

// delayedBy says what put entry e, of a dry run that found it due, off
// until due.
func delayedBy(e report.Entry, due time.Time, frozenUntil *time.Time) string {
	switch {
	case frozenUntil != nil && due.Equal(*frozenUntil):
		return ByFreeze
	case e.HeldUntil != nil && due.Equal(*e.HeldUntil):
		return ByHold
	case e.State == report.StateDeferred:
		return ByBackoff
	case windowed(e, due) != nil:
		return ByWindow
	}
	return ByCondition
}

// list is what the dry runs told, soonest due first; an item still
// waiting to be evaluated says why it was not: the dry runs stopped at
// limit.
func (l *lookahead) list(limit int) List {
	out := List{Version: Version, Now: l.now.UTC(), WithinSeconds: int64(l.within / time.Second), Items: l.items, Failed: l.failed}
	if out.Items == nil {
		out.Items = []Item{}
	}
	for i := range out.Items {
		if it := &out.Items[i]; !it.next.IsZero() {
			it.Reason = fmt.Sprintf("not evaluated at %s: nsman due makes at most %d dry runs", stamp(it.next), limit)
			it.next = time.Time{}
		}
	}
	slices.SortStableFunc(out.Items, func(a, b Item) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Target, b.Target))
	})
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
