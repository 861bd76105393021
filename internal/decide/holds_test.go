package decide

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A hold in force keeps a decision that would act waiting until it ends;
// one that ended is none; one unparseable or beyond the maximum is ignored
// and said so; of several, the latest end holds.
func TestHoldsAt(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	in := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	tests := []struct {
		name    string
		holds   []Hold
		until   time.Time
		ignored string
	}{
		{name: "none", holds: []Hold{{On: "namespace a"}}},
		{name: "in force", holds: []Hold{{On: "namespace a", Value: in(2 * time.Hour)}}, until: now.Add(2 * time.Hour)},
		{name: "ended", holds: []Hold{{On: "namespace a", Value: in(-time.Minute)}}},
		{name: "the latest of two", holds: []Hold{{On: "namespace a", Value: in(time.Hour)}, {On: "manager b/c", Value: in(3 * time.Hour)}}, until: now.Add(3 * time.Hour)},
		{name: "unparseable", holds: []Hold{{On: "namespace a", Value: "tomorrow"}}, ignored: "is not an RFC 3339 time"},
		{name: "too far", holds: []Hold{{On: "namespace a", Value: in(31 * 24 * time.Hour)}}, ignored: "more than --max-hold 30d ahead"},
		{name: "one ignored, one in force", holds: []Hold{{On: "namespace a", Value: "x"}, {On: "manager b/c", Value: in(time.Hour)}}, until: now.Add(time.Hour), ignored: "namespace a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := HoldsAt(tt.holds, now, DefaultMaxHold)
			if !st.Until.Equal(tt.until) {
				t.Errorf("until %v, want %v", st.Until, tt.until)
			}
			if (tt.ignored == "") != (st.Ignored == "") || !strings.Contains(st.Ignored, tt.ignored) {
				t.Errorf("ignored %q, want one saying %q", st.Ignored, tt.ignored)
			}
		})
	}
}

// A hold may end up to --max-hold and holdLeeway ahead, that moment
// included; one a second further is ignored, under the default maximum and
// a non-default one alike.
func TestHoldsAtMaxHoldBoundary(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for max, said := range map[time.Duration]string{DefaultMaxHold: "30d", 2 * time.Hour: "2h"} {
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
				st := HoldsAt([]Hold{{On: "namespace a", Value: until.Format(time.RFC3339)}}, now, max)
				if tt.ignored {
					want := fmt.Sprintf("ends %s, more than --max-hold %s ahead", until.Format(time.RFC3339), said)
					if !st.Until.IsZero() || !strings.Contains(st.Ignored, want) {
						t.Errorf("held until %v, ignored %q; want ignored, saying %q", st.Until, st.Ignored, want)
					}
					return
				}
				if !st.Until.Equal(until) || st.By != "namespace a" || st.Ignored != "" {
					t.Errorf("held until %v by %q, ignored %q; want held until %v", st.Until, st.By, st.Ignored, until)
				}
			})
		}
	}
}
