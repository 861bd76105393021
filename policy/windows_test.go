package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/policy/window"
)

// A policy with windows acts only in them: one that holds outside waits
// for the next to open, still holding; one that waits for a time waits for
// the first open one from then; pods are not checked while closed.
func TestEvaluateInWindows(t *testing.T) {
	nights := []window.Window{{From: 22 * 60, To: 6 * 60, Location: time.UTC}}
	withWindows := func(p Policy) Policy { p.Windows = nights; return p }
	noon := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

	out := Evaluate(mgr(withWindows(expires("expire", noon.Add(-time.Hour)))), Input{Now: noon, TargetCreated: created})
	if out.Verdict != Wait || !out.NextDue.Equal(noon.Add(10*time.Hour)) || !out.Policies[0].Holds || !strings.Contains(out.Policies[0].Detail, "outside its windows (every day 22:00-06:00 UTC): it acts at 2026-11-24T22:00:00Z") {
		t.Errorf("holding at noon: %s, due %v, %+v; want to wait for 22:00, still holding", out.Verdict, out.NextDue, out.Policies)
	}
	if out := Evaluate(mgr(withWindows(expires("expire", noon.Add(-time.Hour)))), Input{Now: noon.Add(11 * time.Hour), TargetCreated: created}); out.Verdict != Fire {
		t.Errorf("holding at 23:00: %s, want fire", out.Verdict)
	}
	out = Evaluate(mgr(withWindows(expires("expire", noon.Add(2*time.Hour)))), Input{Now: noon, TargetCreated: created})
	if out.Verdict != Wait || !out.NextDue.Equal(noon.Add(10*time.Hour)) {
		t.Errorf("due at 14:00, outside: %s, due %v; want the window's 22:00", out.Verdict, out.NextDue)
	}
	out = Evaluate(mgr(withWindows(pods("tests pass"))), Input{Now: noon, TargetCreated: created.Add(-24 * time.Hour)})
	if out.Verdict != Wait || !out.NextDue.Equal(noon.Add(10*time.Hour)) || !strings.Contains(out.Policies[0].Detail, "pods are checked from") {
		t.Errorf("pods condition, closed: %s, due %v, %+v; want no check before 22:00", out.Verdict, out.NextDue, out.Policies)
	}
	// Outside says when the condition comes due, windows aside, for nsman
	// due to say a window delays it: Due when that is in a window.
	held := Evaluate(mgr(withWindows(expires("expire", noon.Add(-time.Hour)))), Input{Now: noon, TargetCreated: created})
	due := Evaluate(mgr(withWindows(expires("expire", noon.Add(2*time.Hour)))), Input{Now: noon, TargetCreated: created})
	inside := Evaluate(mgr(withWindows(expires("expire", noon.Add(11*time.Hour)))), Input{Now: noon, TargetCreated: created})
	switch {
	case !held.Policies[0].Outside.Equal(noon):
		t.Errorf("holding at noon, outside: Outside %v, want noon", held.Policies[0].Outside)
	case !due.Policies[0].Outside.Equal(noon.Add(2 * time.Hour)):
		t.Errorf("due at 14:00, outside: Outside %v, want 14:00", due.Policies[0].Outside)
	case !inside.Policies[0].Outside.Equal(inside.NextDue) || !inside.NextDue.Equal(noon.Add(11*time.Hour)):
		t.Errorf("due at 23:00, inside: Outside %v, due %v; want 23:00 both", inside.Policies[0].Outside, inside.NextDue)
	}
	// Later policies are evaluated while one waits for its window.
	out = Evaluate(mgr(withWindows(expires("expire", noon.Add(-time.Hour))), ttl("backstop", 0)), Input{Now: noon, TargetCreated: created})
	if out.Verdict != Fire || out.Policy != 1 {
		t.Errorf("a backstop after a policy waiting for its window: %s policy %d, want the backstop to fire", out.Verdict, out.Policy)
	}
}

// TestParseKeepsZones: two parses of a manager whose windows name a time
// zone get the same *time.Location, loaded once: time.LoadLocation reads
// and decodes its tzdata file at every call.
func TestParseKeepsZones(t *testing.T) {
	obj := windowedManager()
	first, errs := Parse(obj)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	second, errs := Parse(obj)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for i, p := range first.Policies {
		for j, w := range p.Windows {
			if w.Location.String() == "UTC" {
				t.Fatalf("policy %d window %d: in UTC, want the zone it names", i, j)
			}
			if again := second.Policies[i].Windows[j].Location; again != w.Location {
				t.Fatalf("policy %d window %d: %s loaded again (%p, then %p); want it kept", i, j, w.Location, w.Location, again)
			}
		}
	}
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
