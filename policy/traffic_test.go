package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/policy/window"
)

func idleTraffic(name string, d time.Duration, src traffic.Source) Policy {
	p := idle(name, d)
	p.Condition.Traffic = &src
	return p
}

// IDLE with a traffic source reads it only once every other activity says
// idle: requests in the window are activity now, none leave the other
// activity to decide, and no answer keeps the policy waiting whatever the
// rest says.
func TestEvaluateIdleTraffic(t *testing.T) {
	day := 24 * time.Hour
	m := mgr(idleTraffic("idle a day", day, traffic.Source{Preset: "ingress-nginx"}))
	if out := Evaluate(m, Input{Now: at(time.Hour), TargetCreated: created}); out.Verdict != Wait {
		t.Errorf("a new namespace: %s; want to wait, reading no traffic", out.Verdict)
	}
	old := Input{Now: at(3 * day), TargetCreated: created}
	if out := Evaluate(m, old); out.Verdict != NeedActivity {
		t.Errorf("old, untouched: %s; want its activity asked for first", out.Verdict)
	}
	old.Activity = &Activity{At: at(day), What: "pod web-1 created"}
	if out := Evaluate(m, old); out.Verdict != NeedTraffic || out.Policy != 0 {
		t.Errorf("idle by its activity: %s (policy %d); want its traffic asked for", out.Verdict, out.Policy)
	}
	recent := old
	recent.Activity = &Activity{At: at(3*day - time.Hour), What: "pod web-2 created"}
	if out := Evaluate(m, recent); out.Verdict != Wait {
		t.Errorf("a pod an hour ago: %s; want to wait, reading no traffic", out.Verdict)
	}
	src := "preset ingress-nginx"
	for _, c := range []struct {
		name    string
		tr      traffic.Answer
		verdict Verdict
		due     time.Time
		says    string
	}{
		{"requests in the window", traffic.Answer{Source: src, Window: day, Requests: 12}, Wait, at(3 * day).Truncate(day).Add(day), "requests within 1d (traffic: preset ingress-nginx)"},
		{"none", traffic.Answer{Source: src, Window: day}, Fire, time.Time{}, "no requests in the last 1d (traffic: preset ingress-nginx)"},
		{"no answer", traffic.Answer{Source: src, Window: day, Unknown: "connection refused"}, Wait, time.Time{}, "its traffic (preset ingress-nginx) is not known: connection refused; it waits"},
	} {
		in := old
		in.Traffic = map[int]traffic.Answer{0: c.tr}
		out := Evaluate(m, in)
		detail := ""
		if len(out.Policies) > 0 {
			detail = out.Policies[0].Detail
			if st := out.Policies[0].Traffic; st == nil || *st != c.tr {
				t.Errorf("%s: the state's traffic is %+v, want %+v", c.name, st, c.tr)
			}
		}
		if out.Verdict != c.verdict || !out.NextDue.Equal(c.due) || !strings.Contains(detail, c.says) {
			t.Errorf("%s: %s, due %v, %q; want %s, due %v, saying %q", c.name, out.Verdict, out.NextDue, detail, c.verdict, c.due, c.says)
		}
	}
}

// A target in use keeps the same last activity, due time and reason over
// sweeps a step of idleSeconds long, whatever the requests counted: its
// manager's status, which says them, is not written again at each sweep.
// The due time stays ahead of the sweep.
func TestIdleTrafficKeepsItsStatusStill(t *testing.T) {
	idleFor := time.Hour
	m := mgr(idleTraffic("idle an hour", idleFor, traffic.Source{Preset: "ingress-nginx"}))
	src := "preset ingress-nginx"
	var first Outcome
	step := at(30 * 24 * time.Hour).Truncate(idleFor)
	for i, now := range []time.Time{step, step.Add(time.Minute), step.Add(idleFor / 2), step.Add(idleFor - time.Second)} {
		in := Input{Now: now, TargetCreated: created, Activity: &Activity{At: created, What: "pod web-1 created"},
			Traffic: map[int]traffic.Answer{0: {Source: src, Window: idleFor, Requests: float64(10 + i*7)}}}
		out := Evaluate(m, in)
		if out.Verdict != Wait || !out.NextDue.After(now) || len(out.Policies) == 0 || out.Policies[0].LastActivity == nil {
			t.Fatalf("in use at %v: %s, due %v; want to wait, due after it", now, out.Verdict, out.NextDue)
		}
		if i == 0 {
			first = out
			continue
		}
		if got, want := out.Policies[0], first.Policies[0]; !out.NextDue.Equal(first.NextDue) || *got.LastActivity != *want.LastActivity || got.Detail != want.Detail {
			t.Errorf("in use at %v: due %v, last activity %+v, %q; want as at %v: %v, %+v, %q", now, out.NextDue, *got.LastActivity, got.Detail, step, first.NextDue, *want.LastActivity, want.Detail)
		}
	}
}

// A traffic source is a known preset or a query that reads its range as
// $window, never both, nor anything else.
func TestParseTraffic(t *testing.T) {
	for _, c := range []struct {
		name   string
		params map[string]any
		want   *traffic.Source
		err    string
	}{
		{"none", map[string]any{"idleSeconds": int64(60)}, nil, ""},
		{"a preset", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"preset": "istio"}}, &traffic.Source{Preset: "istio"}, ""},
		{"a query", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"query": `sum by (namespace) (increase(x[$window]))`}},
			&traffic.Source{Query: `sum by (namespace) (increase(x[$window]))`}, ""},
		{"an unknown preset", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"preset": "haproxy"}}, nil, `unknown preset "haproxy"`},
		{"both", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"preset": "istio", "query": "x[$window]"}}, nil, "not both"},
		{"neither", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{}}, nil, "give a preset"},
		{"a query without $window", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"query": "sum by (namespace) (x)"}}, nil, "$window"},
		{"a query too long", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"query": "x[$window]" + strings.Repeat(" ", traffic.MaxQuery)}}, nil, "at most 4096 bytes"},
		{"another key", map[string]any{"idleSeconds": int64(60), "traffic": map[string]any{"preset": "istio", "url": "http://x"}}, nil, `unknown key "url"`},
		{"not an object", map[string]any{"idleSeconds": int64(60), "traffic": "istio"}, nil, "must be an object"},
	} {
		m, problems := Parse(conditionManager(ConditionIdle, c.params))
		switch {
		case c.err == "" && len(problems) > 0:
			t.Errorf("%s: %v", c.name, problems)
		case c.err != "" && (len(problems) == 0 || !strings.Contains(problems.ToAggregate().Error(), c.err)):
			t.Errorf("%s: problems %v, want one saying %q", c.name, problems, c.err)
		case c.err == "" && !equalSource(m.Policies[0].Condition.Traffic, c.want):
			t.Errorf("%s: traffic %+v, want %+v", c.name, m.Policies[0].Condition.Traffic, c.want)
		}
	}
}

func equalSource(a, b *traffic.Source) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// A SLEEP policy on IDLE with traffic asks for its traffic as any other
// does, and sleeps, or not, by what it says; outside its windows it asks
// for nothing.
func TestSleepIdleTraffic(t *testing.T) {
	day := 24 * time.Hour
	p := idleTraffic("sleep unused", day, traffic.Source{Preset: "istio"})
	p.Action = Action{Type: ActionSleep}
	m := mgr(p)
	in := Input{Now: at(3 * day), TargetCreated: created, Activity: &Activity{At: at(day), What: "pod web-1 created"}}
	if out := Evaluate(m, in); out.Verdict != NeedTraffic || out.Policy != 0 {
		t.Fatalf("idle by its activity: %s; want its traffic asked for", out.Verdict)
	}
	in.Traffic = map[int]traffic.Answer{0: {Source: "preset istio", Window: day}}
	if out := Evaluate(m, in); out.Verdict != Fire || out.Wake {
		t.Errorf("no requests: %s (wake %v); want it to fall asleep", out.Verdict, out.Wake)
	}
	in.Asleep, in.Traffic = "sleep unused", map[int]traffic.Answer{0: {Source: "preset istio", Window: day, Requests: 1}}
	if out := Evaluate(m, in); out.Verdict != Fire || !out.Wake {
		t.Errorf("asleep, a request: %s (wake %v); want it to wake", out.Verdict, out.Wake)
	}
	// No answer changes nothing: asleep, it stays so; awake, it stays so.
	in.Traffic = map[int]traffic.Answer{0: {Source: "preset istio", Window: day, Unknown: "connection refused"}}
	if out := Evaluate(m, in); out.Verdict != Wait || len(out.Policies) == 0 || !out.Policies[0].Holds || !strings.Contains(out.Policies[0].Detail, "asleep, it stays so") {
		t.Errorf("asleep, no answer: %s %+v; want it asleep, saying so", out.Verdict, out.Policies)
	}
	in.Asleep = ""
	if out := Evaluate(m, in); out.Verdict != Wait || out.Policies[0].Holds || !strings.Contains(out.Policies[0].Detail, "it waits for an answer") {
		t.Errorf("awake, no answer: %s %+v; want it awake, waiting", out.Verdict, out.Policies)
	}
	p.Windows = []window.Window{{From: 22 * 60, To: 6 * 60, Location: time.UTC}}
	in = Input{Now: at(3*day + 12*time.Hour), TargetCreated: created, Activity: &Activity{At: at(day), What: "pod web-1 created"}}
	if out := Evaluate(mgr(p), in); out.Verdict != Wait || !strings.Contains(out.Policies[0].Detail, "outside its windows") {
		t.Errorf("outside its windows: %s %+v; want it to wait, asking nothing", out.Verdict, out.Policies)
	}
}
