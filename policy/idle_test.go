package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/policy/window"
)

func idle(name string, d time.Duration) Policy {
	return Policy{Name: name, Condition: Condition{Type: ConditionIdle, Idle: d}, Action: Action{Type: ActionDelete}}
}

// IDLE waits without asking for the namespace's activity while its
// creation or touched annotation is recent enough, asks for it once those
// would let it hold, and holds once the newest activity is old enough.
func TestEvaluateIdle(t *testing.T) {
	day := 24 * time.Hour
	m := mgr(idle("idle a day", day))
	if out := Evaluate(m, Input{Now: at(time.Hour), TargetCreated: created}); out.Verdict != Wait || !out.NextDue.Equal(at(day)) {
		t.Errorf("a new namespace: %s, due %v; want to wait a day from its creation, asking nothing", out.Verdict, out.NextDue)
	}
	touched := at(2 * day).Format(time.RFC3339)
	if out := Evaluate(m, Input{Now: at(2*day + time.Hour), TargetCreated: created, TargetTouched: touched}); out.Verdict != Wait || !out.NextDue.Equal(at(3*day)) ||
		!strings.Contains(out.Policies[0].Detail, "annotation "+TouchedAnnotation) {
		t.Errorf("touched an hour ago: %s, due %v, %+v; want to wait a day from the touch", out.Verdict, out.NextDue, out.Policies)
	}
	if out := Evaluate(m, Input{Now: at(3 * day), TargetCreated: created}); out.Verdict != NeedActivity {
		t.Errorf("old, untouched: %s, want its activity asked for", out.Verdict)
	}
	recent := &Activity{At: at(3*day - time.Hour), What: "pod web-1 created"}
	if out := Evaluate(m, Input{Now: at(3 * day), TargetCreated: created, Activity: recent}); out.Verdict != Wait || !out.NextDue.Equal(at(4*day-time.Hour)) ||
		!strings.Contains(out.Policies[0].Detail, "pod web-1 created") {
		t.Errorf("a pod an hour ago: %s, due %v, %+v; want to wait a day from it", out.Verdict, out.NextDue, out.Policies)
	}
	if out := Evaluate(m, Input{Now: at(5 * day), TargetCreated: created, Activity: recent}); out.Verdict != Fire || !strings.Contains(out.Reason, "last activity: pod web-1 created") {
		t.Errorf("idle two days: %s, %q; want it to fire, naming the last activity", out.Verdict, out.Reason)
	}
	if out := Evaluate(m, Input{Now: at(5 * day), TargetCreated: created, Activity: &Activity{}}); out.Verdict != Fire {
		t.Errorf("nothing ever created in it: %s, want fire", out.Verdict)
	}
}

// A touched annotation that does not parse, or is further ahead than
// TouchLeeway, is ignored, and said so; one a few minutes ahead (a clock
// running fast) counts; the newest of creation, touch and activity is the
// last activity the policy reports.
func TestIdleLastActivity(t *testing.T) {
	day := 24 * time.Hour
	m := mgr(idle("idle a day", day))
	now := at(30 * day)
	for _, bad := range []string{"yesterday", now.Add(TouchLeeway + time.Second).Format(time.RFC3339), "9999-12-31T23:59:59Z"} {
		in := Input{Now: now, TargetCreated: created, TargetTouched: bad}
		if out := Evaluate(m, in); out.Verdict != NeedActivity {
			t.Errorf("touched %q: %s; want it ignored, the activity asked for", bad, out.Verdict)
		}
		in.Activity = &Activity{}
		out := Evaluate(m, in)
		if out.Verdict != Fire || !strings.Contains(out.Policies[0].Problem, TouchedAnnotation) || !strings.HasSuffix(out.Policies[0].Problem, ": ignored") ||
			!strings.Contains(out.Reason, out.Policies[0].Problem) {
			t.Errorf("touched %q: %s, %q, %+v; want it to fire as if untouched, saying the annotation is ignored", bad, out.Verdict, out.Reason, out.Policies)
		}
	}
	for _, good := range []string{now.Add(TouchLeeway).Format(time.RFC3339), "2026-04-13 09:26:53+00:00", "2026-04-13t09:26:53z", "2026-04-13T11:26:53.5+02:00"} {
		out := Evaluate(m, Input{Now: now, TargetCreated: created, TargetTouched: good})
		if out.Verdict != Wait || out.Policies[0].Problem != "" || out.Policies[0].LastActivity == nil || !strings.HasPrefix(out.Policies[0].LastActivity.What, "touched") {
			t.Errorf("touched %q: %s, %+v; want it to wait on the touch", good, out.Verdict, out.Policies)
		}
	}
	touched := at(2 * day)
	for _, c := range []struct {
		name     string
		activity *Activity
		want     Activity
	}{
		{"created, never touched, nothing in it", &Activity{}, Activity{At: created, What: "namespace created"}},
		{"touched after the last pod", &Activity{At: at(day), What: "Pod a created"}, Activity{At: touched, What: "touched (annotation " + TouchedAnnotation + ")"}},
		{"a Job after the touch", &Activity{At: at(3 * day), What: "Job b created"}, Activity{At: at(3 * day), What: "Job b created"}},
	} {
		in := Input{Now: at(10 * day), TargetCreated: created, Activity: c.activity}
		if c.name != "created, never touched, nothing in it" {
			in.TargetTouched = touched.Format(time.RFC3339)
		}
		out := Evaluate(m, in)
		if out.Verdict != Fire || out.Policies[0].LastActivity == nil || *out.Policies[0].LastActivity != c.want {
			t.Errorf("%s: %s, %+v; want it to fire with last activity %+v", c.name, out.Verdict, out.Policies, c.want)
		}
	}
	// Outside its windows, IDLE asks for nothing and waits for the opening.
	m.Policies[0].Windows = []window.Window{{From: 22 * 60, To: 6 * 60, Location: time.UTC}}
	opens := time.Date(2026, 3, 24, 22, 0, 0, 0, time.UTC)
	if out := Evaluate(m, Input{Now: opens.Add(-time.Hour), TargetCreated: created}); out.Verdict != Wait || !out.NextDue.Equal(opens) ||
		!strings.Contains(out.Policies[0].Detail, "its activity is read from "+opens.Format(time.RFC3339)) {
		t.Errorf("outside its windows: %s, due %v, %+v; want to wait for 22:00, asking nothing", out.Verdict, out.NextDue, out.Policies)
	}
	// Touched an hour ago, it waits on the touch, then for the window
	// open at that time, asking nothing.
	touchedAt := opens.Add(-time.Hour)
	in := Input{Now: opens.Add(-time.Hour), TargetCreated: created, TargetTouched: touchedAt.Format(time.RFC3339)}
	if out := Evaluate(m, in); out.Verdict != Wait || !out.NextDue.Equal(opens.Add(day)) || out.Policies[0].LastActivity == nil {
		t.Errorf("touched, outside its windows: %s, due %v, %+v; want to wait for the window open a day after the touch", out.Verdict, out.NextDue, out.Policies)
	}
}

// Outside its windows an IDLE policy that would read its activity says an
// ignored touch too.
func TestIdleOutsideWindowsSaysTheIgnoredTouch(t *testing.T) {
	m := mgr(idle("idle a day", 24*time.Hour))
	m.Policies[0].Windows = []window.Window{{From: 22 * 60, To: 6 * 60, Location: time.UTC}}
	now := time.Date(2026, 4, 20, 12, 0, 0, 0, time.UTC)
	out := Evaluate(m, Input{Now: now, TargetCreated: created, TargetTouched: "soon"})
	if st := out.Policies[0]; out.Verdict != Wait || st.Problem == "" || !strings.Contains(st.Detail, "its activity is read from") || !strings.Contains(st.Detail, st.Problem) {
		t.Errorf("%s, %+v; want it waiting for the window, saying the touch is ignored", out.Verdict, out.Policies)
	}
}

// A touch older than the namespace's creation is not its last activity:
// a namespace recreated under an old name, with the annotation its
// manifest kept, waits a whole idle period from its creation.
func TestIdleTouchOlderThanCreation(t *testing.T) {
	day := 24 * time.Hour
	m := mgr(idle("idle a day", day))
	recreated := at(10 * day)
	in := Input{Now: recreated.Add(time.Hour), TargetCreated: recreated, TargetTouched: at(day).Format(time.RFC3339)}
	for _, activity := range []*Activity{nil, {}} {
		in.Activity = activity
		out := Evaluate(m, in)
		if out.Verdict != Wait || len(out.Policies) != 1 {
			t.Errorf("activity %+v: %s, %+v; want to wait a day from the creation, asking nothing", activity, out.Verdict, out.Policies)
			continue
		}
		if st := out.Policies[0]; !out.NextDue.Equal(recreated.Add(day)) || st.LastActivity == nil ||
			*st.LastActivity != (Activity{At: recreated, What: ActivityCreated}) || st.Problem != "" {
			t.Errorf("activity %+v: %s, due %v, %+v; want to wait a day from the creation, the old touch not its last activity", activity, out.Verdict, out.NextDue, out.Policies)
		}
	}
}
