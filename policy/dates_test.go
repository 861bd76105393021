package policy

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// holidayManager is a rule that sleeps at night in Berlin and all day
// through the holidays of 2026, its windows as a manifest writes them.
func holidayManager(holidays ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version, "kind": Kind,
		"metadata": map[string]any{"namespace": "namespace-manager", "name": "holidays", "uid": "uid-h", "generation": int64(1)},
		"spec": map[string]any{
			"namePatterns": []any{"dev-*"},
			"policies": []any{map[string]any{
				"name":      "nights and holidays",
				"condition": map[string]any{"type": ConditionTTL, "params": map[string]any{"ttlSeconds": int64(0)}},
				"action":    map[string]any{"type": ActionSleep},
				"windows": []any{
					map[string]any{"from": "20:00", "to": "07:00", "timeZone": "Europe/Berlin"},
					map[string]any{"dates": holidays, "timeZone": "Europe/Berlin"},
				},
			}},
		},
	}}
}

// TestSleepThroughHolidays: a SLEEP rule with nights and a range of dates
// sleeps from the evening before the first date (its night) to the
// morning after the last (the holidays' end carried on by that night), and
// says so; before it, it waits for the evening; after, for each night.
func TestSleepThroughHolidays(t *testing.T) {
	m, errs := ParseStrict(holidayManager("2026-12-24..2027-01-01"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const p = "nights and holidays"
	tests := []struct {
		name    string
		now     string
		asleep  bool
		verdict Verdict
		due     string
		detail  string
	}{
		{"the afternoon before: waits for the night", "2026-12-23T12:00:00Z", false, Wait, "2026-12-23T19:00:00Z", "until 2026-12-23T19:00:00Z"},
		{"the night before: sleeps", "2026-12-23T19:00:00Z", false, Fire, "2026-12-24T06:00:00Z", "in its window every day 20:00-07:00 Europe/Berlin"},
		{"Christmas Eve at noon, asleep: sleeps on to the last night's end", "2026-12-24T11:00:00Z", true, Wait, "2027-01-02T06:00:00Z", "asleep until 2027-01-02T06:00:00Z"},
		{"New Year's Day, awake (woken): sleeps", "2027-01-01T11:00:00Z", false, Fire, "2027-01-01T23:00:00Z", "in its window on 2026-12-24..2027-01-01 all day Europe/Berlin until 2027-01-01T23:00:00Z"},
		{"the morning after, asleep: wakes", "2027-01-02T06:00:00Z", true, Fire, "2027-01-02T19:00:00Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(utc(tt.now))
			if tt.asleep {
				in.Asleep = p
			}
			out := Evaluate(m, in)
			st := out.Policies[0]
			if out.Verdict != tt.verdict || !st.Due.Equal(utc(tt.due)) || !strings.Contains(st.Detail, tt.detail) {
				t.Errorf("%s, due %s, %q; want %s, due %s, saying %q", out.Verdict, st.Due.UTC().Format(time.RFC3339), st.Detail, tt.verdict, tt.due, tt.detail)
			}
		})
	}
}

// TestPastWindows: nsman validate's check, at a time, of windows whose
// dates are all past: named at their dates; none before the last closes,
// nor for a window without dates; a sweep's policy whose windows are all
// past waits for nothing and says why.
func TestPastWindows(t *testing.T) {
	m, errs := ParseStrict(holidayManager("2025-12-24..2026-01-01", "2026-04-03"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := PastWindows(m, utc("2026-04-03T21:59:00Z")); len(errs) > 0 {
		t.Errorf("on its last date: %v, want none", errs)
	}
	errs = PastWindows(m, utc("2026-04-03T22:00:00Z"))
	if len(errs) != 1 || errs[0].Field != "spec.policies[0].windows[1].dates" || !strings.Contains(errs[0].Error(), "every date is past at 2026-04-03T22:00:00Z: the window never opens again") {
		t.Errorf("after its last date: %v, want windows[1].dates refused", errs)
	}

	p := m.Policies[0]
	p.Windows = p.Windows[1:]
	for _, action := range []string{ActionSleep, ActionDelete} {
		p.Action.Type = action
		out := Evaluate(mgr(p), input(utc("2026-06-01T12:00:00Z")))
		st := out.Policies[0]
		if out.Verdict != Wait || !out.NextDue.IsZero() || st.Holds || !strings.Contains(st.Detail, "which open no more: their dates are past") {
			t.Errorf("%s, its windows past: %s, due %v, %+v; want to wait for nothing, saying why", action, out.Verdict, out.NextDue, st)
		}
	}
}
