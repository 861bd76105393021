package policy

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"
)

func ownerGone(name string, grace time.Duration) Policy {
	return Policy{Name: name, Condition: Condition{Type: ConditionOwnerGone, Grace: grace}, Action: Action{Type: ActionDelete}}
}

const prRef = "applications.argoproj.io/argocd/pr-12"

func owner(p OwnerPresence) *Owner {
	return &Owner{Ref: prRef, By: "argocd.argoproj.io/tracking-id", Presence: p}
}

// OWNER_GONE's params: graceSeconds defaults to 300, takes 0 and refuses
// less.
func TestOwnerGoneParams(t *testing.T) {
	for _, tc := range []struct {
		params map[string]any
		want   time.Duration
		errs   int
	}{
		{map[string]any{}, 300 * time.Second, 0},
		{map[string]any{"graceSeconds": int64(0)}, 0, 0},
		{map[string]any{"graceSeconds": int64(3600)}, time.Hour, 0},
		{map[string]any{"graceSeconds": int64(-1)}, 300 * time.Second, 1},
	} {
		m, errs := Parse(conditionManager(ConditionOwnerGone, tc.params))
		if len(errs) != tc.errs || m.Policies[0].Condition.Grace != tc.want {
			t.Errorf("params %v: grace %s, %v; want %s and %d problems", tc.params, m.Policies[0].Condition.Grace, errs, tc.want, tc.errs)
		}
	}
}

// OWNER_GONE never holds on a namespace that names no owner, nor on one
// whose owner cannot be read (which changes nothing it remembers), and
// holds once the owner has been gone for the grace, counted from the
// first sweep that found it gone.
func TestEvaluateOwnerGone(t *testing.T) {
	m := mgr(ownerGone("orphan", 5*time.Minute))
	now := at(time.Hour)
	out := Evaluate(m, Input{Now: now, TargetCreated: created})
	if out.Verdict != Wait || !out.NextDue.IsZero() || len(out.Checks) != 0 || !strings.Contains(out.Policies[0].Detail, "names no owner") {
		t.Errorf("no owner: %s, due %v, checks %v, %+v; want it to wait for nothing, saying it names no owner", out.Verdict, out.NextDue, out.Checks, out.Policies)
	}
	stored := map[string]CheckState{"orphan": {Owner: prRef, GoneSince: now.Add(-time.Hour)}}
	unknown := &Owner{Ref: prRef, By: OwnerRemembered, Why: "applications.argoproj.io is not installed"}
	out = Evaluate(m, Input{Now: now, TargetCreated: created, Owner: unknown, Checks: stored})
	if out.Verdict != Wait || !maps.Equal(out.Checks, stored) || !strings.Contains(out.Policies[0].Detail, unknown.Why) {
		t.Errorf("unknown, gone an hour before: %s, checks %v, %+v; want it to wait, saying why, keeping what it remembers", out.Verdict, out.Checks, out.Policies)
	}
	out = Evaluate(m, Input{Now: now, TargetCreated: created, Owner: owner(OwnerPresent), Checks: stored})
	if want := map[string]CheckState{"orphan": {Owner: prRef}}; out.Verdict != Wait || !maps.Equal(out.Checks, want) || !strings.Contains(out.Policies[0].Detail, prRef+" (argocd.argoproj.io/tracking-id) exists") {
		t.Errorf("present: %s, checks %v, %+v; want it to wait, remembering the owner and clearing when it went", out.Verdict, out.Checks, out.Policies)
	}
	first := Evaluate(m, Input{Now: now, TargetCreated: created, Owner: owner(OwnerGone), Checks: out.Checks})
	if want := (CheckState{Owner: prRef, GoneSince: now}); first.Verdict != Wait || first.Checks["orphan"] != want || !first.NextDue.Equal(now.Add(5*time.Minute)) {
		t.Errorf("found gone: %s, checks %v, due %v; want it to wait the grace from now", first.Verdict, first.Checks, first.NextDue)
	}
	for _, tc := range []struct {
		after time.Duration
		want  Verdict
	}{{time.Minute, Wait}, {5*time.Minute - time.Second, Wait}, {5 * time.Minute, Fire}, {time.Hour, Fire}} {
		out := Evaluate(m, Input{Now: now.Add(tc.after), TargetCreated: created, Owner: owner(OwnerGone), Checks: first.Checks})
		if out.Verdict != tc.want || !maps.Equal(out.Checks, first.Checks) {
			t.Errorf("gone %s later: %s, checks %v; want %s, counted from the first sweep that found it gone", tc.after, out.Verdict, out.Checks, tc.want)
		}
		if tc.want == Fire && !strings.Contains(out.Reason, "gone since "+stamp(now)) {
			t.Errorf("gone %s later: %q; want the reason to say since when", tc.after, out.Reason)
		}
	}
}

// A grace of 0 holds at the first sweep that finds the owner gone.
func TestOwnerGoneWithoutGrace(t *testing.T) {
	now := at(time.Hour)
	out := Evaluate(mgr(ownerGone("orphan", 0)), Input{Now: now, TargetCreated: created, Owner: owner(OwnerGone)})
	if out.Verdict != Fire || out.Checks["orphan"].GoneSince != now {
		t.Errorf("grace 0: %s, checks %v; want it to fire at once", out.Verdict, out.Checks)
	}
}

// Another owner than the one remembered gone starts the grace over.
func TestOwnerGoneOtherOwnerStartsOver(t *testing.T) {
	now := at(time.Hour)
	stored := map[string]CheckState{"orphan": {Owner: "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-12", GoneSince: now.Add(-time.Hour)}}
	out := Evaluate(mgr(ownerGone("orphan", 5*time.Minute)), Input{Now: now, TargetCreated: created, Owner: owner(OwnerGone), Checks: stored})
	if want := (CheckState{Owner: prRef, GoneSince: now}); out.Verdict != Wait || out.Checks["orphan"] != want {
		t.Errorf("another owner gone: %s, checks %v; want %v, waiting the grace from now", out.Verdict, out.Checks, want)
	}
	if stored["orphan"].Owner == prRef {
		t.Error("Evaluate changed the checks it was given")
	}
}

// What OWNER_GONE keeps compares equal after the record's JSON round
// trip, whatever clock and zone the sweep's time came in: a waiting pair
// is written when it changes (record.NeedsRecord), not at every sweep.
func TestOwnerGoneStateRoundTrips(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, now := range []time.Time{at(time.Hour), time.Now(), time.Now().In(berlin)} {
		out := Evaluate(mgr(ownerGone("orphan", time.Hour)), Input{Now: now, TargetCreated: created, Owner: owner(OwnerGone)})
		data, err := json.Marshal(out.Checks)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]CheckState
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(back, out.Checks) {
			t.Errorf("now %v: %v after a round trip through %s, was %v", now, back, data, out.Checks)
		}
		again := Evaluate(mgr(ownerGone("orphan", time.Hour)), Input{Now: now.Add(time.Minute), TargetCreated: created, Owner: owner(OwnerGone), Checks: back})
		if !maps.Equal(again.Checks, back) {
			t.Errorf("now %v: the next sweep keeps %v, stored %v", now, again.Checks, back)
		}
	}
	present, err := json.Marshal(CheckState{Owner: prRef})
	if err != nil || strings.Contains(string(present), "goneSince") {
		t.Errorf("an owner present is stored as %s (%v); want no goneSince", present, err)
	}
}

// What the detail repeats of an owner a tenant's marker names is bounded:
// a marker that does not parse names no ref, and says so by its key.
func TestOwnerGoneDetailIsBounded(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	for _, o := range []*Owner{
		{By: OwnerAnnotation, Why: "annotation " + OwnerAnnotation + ": " + huge + " is not <resource>.<group>/<namespace>/<name>"},
		{Ref: huge, By: huge, Presence: OwnerGone},
		{Ref: huge, By: huge, Presence: OwnerPresent},
	} {
		out := Evaluate(mgr(ownerGone("orphan", 0)), Input{Now: at(time.Hour), TargetCreated: created, Owner: o})
		if d := out.Policies[0].Detail; len(d) > 1024 || (o.Ref == "" && !strings.Contains(d, "named by "+OwnerAnnotation)) {
			t.Errorf("owner %.40q by %.40q: a detail of %d bytes: %.120q", o.Ref, o.By, len(d), d)
		}
	}
}
