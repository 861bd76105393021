package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
)

// A hold in force keeps a decision that would act waiting until it ends;
// one that ended is none; one unparseable or beyond the maximum is ignored
// and said so; of several, the latest end holds.
func TestHoldsAt(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	in := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	tests := []struct {
		name    string
		holds   []hold
		until   time.Time
		ignored string
	}{
		{name: "none", holds: []hold{{on: "namespace a"}}},
		{name: "in force", holds: []hold{{on: "namespace a", value: in(2 * time.Hour)}}, until: now.Add(2 * time.Hour)},
		{name: "ended", holds: []hold{{on: "namespace a", value: in(-time.Minute)}}},
		{name: "the latest of two", holds: []hold{{on: "namespace a", value: in(time.Hour)}, {on: "manager b/c", value: in(3 * time.Hour)}}, until: now.Add(3 * time.Hour)},
		{name: "unparseable", holds: []hold{{on: "namespace a", value: "tomorrow"}}, ignored: "is not an RFC 3339 time"},
		{name: "too far", holds: []hold{{on: "namespace a", value: in(31 * 24 * time.Hour)}}, ignored: "more than --max-hold 720h0m0s ahead"},
		{name: "one ignored, one in force", holds: []hold{{on: "namespace a", value: "x"}, {on: "manager b/c", value: in(time.Hour)}}, until: now.Add(time.Hour), ignored: "namespace a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := holdsAt(tt.holds, now, DefaultMaxHold)
			if !st.until.Equal(tt.until) {
				t.Errorf("until %v, want %v", st.until, tt.until)
			}
			if (tt.ignored == "") != (st.ignored == "") || !strings.Contains(st.ignored, tt.ignored) {
				t.Errorf("ignored %q, want one saying %q", st.ignored, tt.ignored)
			}
		})
	}
}

// apply turns an action into waiting until the hold ends, and moves a
// waiting decision's due time to the hold's end, never earlier.
func TestHoldApply(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	until := now.Add(time.Hour)
	st := holdState{until: until, by: "namespace a"}
	d := st.apply(decision{entry: report.Entry{State: report.StatePlanned}, plan: &plan{step: stepAct}})
	if d.plan != nil || d.entry.State != report.StateWaiting || d.entry.Due == nil || !d.entry.Due.Equal(until) || d.entry.HeldUntil == nil {
		t.Errorf("held action: %+v", d)
	}
	early := now.Add(time.Minute)
	d = st.apply(decision{entry: report.Entry{State: report.StateWaiting, Due: &early}})
	if !d.entry.Due.Equal(until) || !strings.Contains(d.entry.Message, "held until") {
		t.Errorf("held wait: due %v, message %q", d.entry.Due, d.entry.Message)
	}
	late := now.Add(2 * time.Hour)
	if d = st.apply(decision{entry: report.Entry{State: report.StateWaiting, Due: &late}}); !d.entry.Due.Equal(late) {
		t.Errorf("a due time after the hold moved to %v", d.entry.Due)
	}
	// Completing a claim is finishing an action already started: no hold.
	if d = st.apply(decision{plan: &plan{step: stepCompleteClaim}}); d.plan == nil {
		t.Error("a claim's completion was held")
	}
}

// A hold may end up to --max-hold and holdLeeway ahead, that moment
// included; one a second further is ignored, under the default maximum and
// a non-default one alike.
func TestHoldsAtMaxHoldBoundary(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, max := range []time.Duration{DefaultMaxHold, 2 * time.Hour} {
		for _, tt := range []struct {
			ahead   time.Duration
			ignored bool
		}{
			{ahead: max + holdLeeway - time.Second},
			{ahead: max + holdLeeway},
			{ahead: max + holdLeeway + time.Second, ignored: true},
			{ahead: max + holdLeeway + time.Minute, ignored: true},
		} {
			t.Run(fmt.Sprintf("max %s, ahead %s", max, tt.ahead), func(t *testing.T) {
				until := now.Add(tt.ahead)
				st := holdsAt([]hold{{on: "namespace a", value: until.Format(time.RFC3339)}}, now, max)
				if tt.ignored {
					want := fmt.Sprintf("ends %s, more than --max-hold %s ahead", until.Format(time.RFC3339), max)
					if !st.until.IsZero() || !strings.Contains(st.ignored, want) {
						t.Errorf("held until %v, ignored %q; want ignored, saying %q", st.until, st.ignored, want)
					}
					return
				}
				if !st.until.Equal(until) || st.by != "namespace a" || st.ignored != "" {
					t.Errorf("held until %v by %q, ignored %q; want held until %v", st.until, st.by, st.ignored, until)
				}
			})
		}
	}
}
