package due

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
)

var now = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := now.Add(d); return &t }

// entry is a manager's entry of a dry run, with mutators.
func entry(name string, state report.State, mutate ...func(*report.Entry)) report.Entry {
	e := report.Entry{Namespace: "team", Name: name, Target: name, State: state, Message: name + " says"}
	for _, m := range mutate {
		m(&e)
	}
	return e
}

func dueIn(d time.Duration) func(*report.Entry) {
	return func(e *report.Entry) { e.Due = at(d) }
}

func acts(policy, action string) func(*report.Entry) {
	return func(e *report.Entry) { e.Policy, e.Action = policy, action }
}

func condition(c report.Condition) func(*report.Entry) {
	return func(e *report.Entry) { e.Conditions = append(e.Conditions, c) }
}

// runs answers the dry runs at each time with the entries given, every
// other subject planned then.
type runs struct {
	now       report.Report
	at        map[time.Time]report.Report
	asked     []time.Time
	plannedAt func(t time.Time) []report.Entry
}

func (r *runs) run(_ context.Context, t time.Time) (report.Report, error) {
	if t.IsZero() {
		return r.now, nil
	}
	r.asked = append(r.asked, t)
	if rep, ok := r.at[t]; ok {
		return rep, nil
	}
	return report.Report{Summary: report.Summary{Now: t}, Entries: r.plannedAt(t)}, nil
}

// planned is every entry of now planned by policy "p", as the dry run at
// any later time says of them.
func planned(entries []report.Entry) func(time.Time) []report.Entry {
	return func(time.Time) []report.Entry {
		out := make([]report.Entry, 0, len(entries))
		for _, e := range entries {
			out = append(out, entry(e.Name, report.StatePlanned, acts("p", "DELETE")))
		}
		return out
	}
}

// What is due within the time is listed, soonest due first, with what puts
// it off and when it acts: a hold or a window that put its due time off
// already, a freeze found at its due time; a webhook backing off.
func TestLook(t *testing.T) {
	held := entry("held", report.StateWaiting, dueIn(5*time.Hour), func(e *report.Entry) { e.HeldUntil = at(5 * time.Hour) },
		condition(report.Condition{Policy: "ttl", Due: at(2 * time.Hour)}))
	windowed := entry("windowed", report.StateWaiting, dueIn(10*time.Hour),
		condition(report.Condition{Policy: "ttl", Due: at(10 * time.Hour), OutsideWindows: at(4 * time.Hour)}))
	entries := []report.Entry{
		entry("later", report.StateWaiting, dueIn(30*time.Hour)),
		entry("soon", report.StateWaiting, dueIn(time.Hour), condition(report.Condition{Policy: "ttl", Due: at(time.Hour)})),
		entry("now", report.StatePlanned, acts("ttl", "DELETE")),
		held, windowed,
		entry("frozen", report.StateWaiting, dueIn(3*time.Hour)),
		entry("backoff", report.StateDeferred, dueIn(20*time.Minute), acts("notify", "WEBHOOK")),
		entry("deactivated", report.StateDeactivated),
		entry("pods", report.StateWaiting),
	}
	thaw := now.Add(50 * time.Hour)
	r := &runs{now: report.Report{Summary: report.Summary{Now: now}, Entries: entries}, plannedAt: planned(entries), at: map[time.Time]report.Report{
		now.Add(3 * time.Hour): {Summary: report.Summary{Now: now.Add(3 * time.Hour), FrozenUntil: &thaw},
			Entries: []report.Entry{entry("frozen", report.StateWaiting, acts("p", "DELETE"), dueIn(50*time.Hour))}},
	}}
	l, err := Options{Within: 24 * time.Hour}.Look(context.Background(), r.run)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		name   string
		due    time.Duration
		actsAt time.Duration
		by     string
	}
	wants := []want{
		{"backoff", 0, 20 * time.Minute, ByBackoff},
		{"now", 0, 0, ""},
		{"soon", time.Hour, time.Hour, ""},
		{"held", 2 * time.Hour, 5 * time.Hour, ByHold},
		{"frozen", 3 * time.Hour, 50 * time.Hour, ByFreeze},
		{"windowed", 4 * time.Hour, 10 * time.Hour, ByWindow},
	}
	if len(l.Items) != len(wants) {
		t.Fatalf("%d items, want %d: %+v", len(l.Items), len(wants), l.Items)
	}
	for i, w := range wants {
		it := l.Items[i]
		var by []string
		for _, d := range it.DelayedBy {
			by = append(by, d.By)
		}
		switch {
		case it.Name != w.name:
			t.Errorf("item %d is %s, want %s", i, it.Name, w.name)
		case !it.Due.Equal(now.Add(w.due)):
			t.Errorf("%s: due %s, want %s", it.Name, it.Due, now.Add(w.due))
		case it.ActsAt == nil || !it.ActsAt.Equal(now.Add(w.actsAt)):
			t.Errorf("%s: acts at %v, want %s", it.Name, it.ActsAt, now.Add(w.actsAt))
		case strings.Join(by, ",") != w.by:
			t.Errorf("%s: delayed by %v, want %q", it.Name, it.DelayedBy, w.by)
		}
	}
	if l.Items[3].Policy != "p" || l.Items[3].Action != "DELETE" {
		t.Errorf("held: policy %q action %q, want those of the dry run that acts", l.Items[3].Policy, l.Items[3].Action)
	}
	if l.Version != Version || !l.Now.Equal(now) || l.WithinSeconds != 86400 {
		t.Errorf("list: %s %s %d", l.Version, l.Now, l.WithinSeconds)
	}
}

// A subject whose condition waits again at each due time is followed
// maxDelays times, then said to be still waiting; one the dry run at its
// due time does not list says so.
func TestLookFollowsBounded(t *testing.T) {
	entries := []report.Entry{entry("idle", report.StateWaiting, dueIn(time.Hour)), entry("gone", report.StateWaiting, dueIn(2*time.Hour))}
	r := &runs{now: report.Report{Summary: report.Summary{Now: now}, Entries: entries}, plannedAt: func(t time.Time) []report.Entry {
		return []report.Entry{entry("idle", report.StateWaiting, func(e *report.Entry) { e.Due = at(t.Sub(now) + time.Hour) })}
	}}
	l, err := Options{Within: 24 * time.Hour}.Look(context.Background(), r.run)
	if err != nil {
		t.Fatal(err)
	}
	idle, gone := l.Items[0], l.Items[1]
	if len(r.asked) != maxDelays+1 || idle.ActsAt != nil || len(idle.DelayedBy) != maxDelays || idle.DelayedBy[0].By != ByCondition {
		t.Errorf("idle: %d dry runs, %+v; want %d, still waiting after %d delays", len(r.asked), idle, maxDelays+1, maxDelays)
	}
	if gone.ActsAt != nil || !strings.Contains(gone.Reason, "not in the dry run at 2026-11-24T11:00:00Z") {
		t.Errorf("gone: %+v", gone)
	}
	if got := delayed(idle, now); got != "condition, condition, condition (still waiting in 4h)" {
		t.Errorf("DELAYED BY %q", got)
	}
}

// Look makes at most MaxRuns dry runs after the first; what it did not
// evaluate is listed as due, saying so.
func TestLookStopsAtMaxRuns(t *testing.T) {
	var entries []report.Entry
	for i := range MaxRuns + 2 {
		entries = append(entries, entry(string(rune('a'+i%26))+strings.Repeat("x", i/26), report.StateWaiting, dueIn(time.Duration(i+1)*time.Minute)))
	}
	r := &runs{now: report.Report{Summary: report.Summary{Now: now}, Entries: entries}, plannedAt: planned(entries)}
	l, err := Options{Within: 24 * time.Hour}.Look(context.Background(), r.run)
	if err != nil {
		t.Fatal(err)
	}
	last := l.Items[len(l.Items)-1]
	if len(r.asked) != MaxRuns || last.ActsAt != nil || !strings.Contains(last.Reason, "at most 100 dry runs") || l.Items[0].ActsAt == nil {
		t.Errorf("%d dry runs; last %+v", len(r.asked), last)
	}
}

// A dry run that fails fails nsman due.
func TestLookFails(t *testing.T) {
	failed := errors.New("no cluster")
	_, err := Options{Within: time.Hour}.Look(context.Background(), func(context.Context, time.Time) (report.Report, error) { return report.Report{}, failed })
	if !errors.Is(err, failed) {
		t.Errorf("err %v", err)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name      string
		o         Options
		namespace string
		want      string
	}{
		{"default", Options{Within: DefaultWithin, Output: "text"}, "", ""},
		{"wide in a namespace", Options{Within: time.Hour, Output: "wide"}, "team", ""},
		{"zero", Options{Output: "text"}, "", "--within must be positive"},
		{"-A and -n", Options{Within: time.Hour, AllNamespaces: true, Output: "text"}, "team", "-A and -n"},
		{"name", Options{Within: time.Hour, Output: "name"}, "", ""},
		{"table", Options{Within: time.Hour, Output: "table"}, "", `-o "table": want text, wide, json, yaml, name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.Check(c.namespace)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
}

// Nothing due: nothing on stdout for a table, an empty list for JSON, and
// the line on stderr.
func TestPrintNothing(t *testing.T) {
	for format, want := range map[string]string{"text": "", "name": "", "json": `"due": []`} {
		var stdout, stderr strings.Builder
		if err := (Options{Within: 24 * time.Hour, Output: format}).Print(&stdout, &stderr, (&lookahead{now: now, within: 24 * time.Hour}).list(MaxRuns)); err != nil {
			t.Fatal(err)
		}
		if stderr.String() != "nothing due within 1d\n" || want == "" && stdout.Len() > 0 || !strings.Contains(stdout.String(), want) {
			t.Errorf("-o %s: stdout %q, stderr %q", format, stdout.String(), stderr.String())
		}
	}
}

// What the first dry run failed to evaluate is said, a line each, and so is
// a listing that stopped half-way.
func TestLookSaysWhatFailed(t *testing.T) {
	rep := report.Report{Summary: report.Summary{Now: now, ListError: "list NamespaceManagers: gone"},
		Entries: []report.Entry{entry("broken", report.StateFailed), entry("soon", report.StatePlanned)}}
	l, err := Options{Within: time.Hour}.Look(context.Background(), func(context.Context, time.Time) (report.Report, error) { return rep, nil })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.Failed, "|") != "team/broken: broken says|list NamespaceManagers: gone" || len(l.Items) != 1 {
		t.Errorf("failed %q, items %+v", l.Failed, l.Items)
	}
}

// -o name names each subject due as nsman sweep -o name names its
// entries: a manager, a rule's pair's namespace, each once.
func TestPrintNames(t *testing.T) {
	l := List{Items: []Item{
		{Namespace: "team-a", Name: "ttl", Target: "team-a"},
		{Namespace: "ops", Name: "previews", Rule: true, Target: "pr-1"},
		{Namespace: "ops", Name: "other", Rule: true, Target: "pr-1"},
		{Namespace: "team-b", Name: "ci", Target: "team-b"},
	}}
	var stdout, stderr strings.Builder
	if err := (Options{Within: time.Hour, Output: "name"}).Print(&stdout, &stderr, l); err != nil {
		t.Fatal(err)
	}
	want := "namespacemanager.k8s.consol.de/team-a/ttl\nnamespace/pr-1\nnamespacemanager.k8s.consol.de/team-b/ci\n"
	if stdout.String() != want || stderr.Len() > 0 {
		t.Errorf("-o name: stdout %q, stderr %q; want %q", stdout.String(), stderr.String(), want)
	}
}
