package policy

import (
	"strings"
	"testing"
	"time"
)

func expires(name string, at time.Time) Policy {
	return Policy{Name: name, Condition: Condition{Type: ConditionExpires, At: at}, Action: Action{Type: ActionDelete}}
}

// EXPIRES holds once params.at, else the target's annotation, has passed;
// a date means the end of that day in UTC; a namespace without the
// annotation never expires by it, and one whose annotation does not parse
// neither, which the state says as a problem.
func TestEvaluateExpires(t *testing.T) {
	noon := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		at         time.Time
		annotation string
		now        time.Time
		fire       bool
		due        time.Time
		detail     string
		problem    string
	}{
		{name: "params.at ahead", at: noon, now: noon.Add(-time.Minute), due: noon, detail: "expires at 2026-12-01T12:00:00Z (params.at)"},
		{name: "params.at passed", at: noon, now: noon, fire: true, detail: "expired at 2026-12-01T12:00:00Z (params.at)"},
		{name: "params.at wins over the annotation", at: noon, annotation: "2020-01-01", now: noon.Add(-time.Hour), due: noon},
		{name: "annotation, a time in another zone", annotation: "2026-12-01T13:00:00+01:00", now: noon, fire: true, detail: "expired at 2026-12-01T12:00:00Z (annotation nsman.k8s.consol.de/expires)"},
		{name: "annotation, a date: the end of that day", annotation: "2026-12-01", now: noon, due: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
		{name: "annotation, a date that ended", annotation: "2026-11-30", now: noon, fire: true},
		{name: "no annotation", now: noon, detail: "never expires by it"},
		{name: "annotation that does not parse", annotation: "next friday", now: noon, problem: `"next friday" is neither an RFC 3339 time`},
		{name: "a date that does not exist", annotation: "2026-02-30", now: noon, problem: "neither an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(mgr(expires("expire", tt.at)), Input{Now: tt.now, TargetCreated: created, TargetExpires: tt.annotation})
			if got := out.Verdict == Fire; got != tt.fire {
				t.Fatalf("verdict %s, want fire %v (%+v)", out.Verdict, tt.fire, out.Policies)
			}
			st := out.Policies[0]
			if !out.NextDue.Equal(tt.due) || !strings.Contains(st.Detail, tt.detail) {
				t.Errorf("next due %v, detail %q; want %v, %q", out.NextDue, st.Detail, tt.due, tt.detail)
			}
			if tt.problem == "" && st.Problem != "" || !strings.Contains(st.Problem, tt.problem) {
				t.Errorf("problem %q, want %q", st.Problem, tt.problem)
			}
		})
	}
}
