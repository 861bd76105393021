package warn

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParse(t *testing.T) {
	path := field.NewPath("spec", "policies").Index(0).Child("warnBefore")
	for _, tc := range []struct {
		name    string
		raw     any
		want    []time.Duration
		wantErr string
	}{
		{name: "absent", raw: nil},
		{name: "longest first", raw: []any{"1h", "24h"}, want: []time.Duration{24 * time.Hour, time.Hour}},
		{name: "days", raw: []any{"2d", "1d12h"}, want: []time.Duration{48 * time.Hour, 36 * time.Hour}},
		{name: "one minute is the least", raw: []any{"1m"}, want: []time.Duration{time.Minute}},
		{name: "under a minute", raw: []any{"30s"}, wantErr: "at least 1m:"},
		{name: "zero", raw: []any{"0s"}, wantErr: "at least 1m:"},
		{name: "negative", raw: []any{"-1h"}, wantErr: "want a duration"},
		{name: "no unit", raw: []any{"12"}, wantErr: "want a duration"},
		{name: "not a string", raw: []any{60}, wantErr: "want a duration"},
		{name: "duplicate", raw: []any{"1h", "60m"}, wantErr: "Duplicate value"},
		{name: "five", raw: []any{"1h", "2h", "3h", "4h", "5h"}, wantErr: "must have at most 4 items"},
		{name: "not a list", raw: "1h", wantErr: "must be a list of durations"},
		{name: "too many days", raw: []any{"99999d"}, wantErr: "want a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.raw, path)
			if tc.wantErr != "" {
				if !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) {
					t.Fatalf("errors %v, want one with %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) > 0 || !slices.Equal(got, tc.want) {
				t.Fatalf("Parse = %v, %v; want %v", got, errs, tc.want)
			}
		})
	}
}

func TestNext(t *testing.T) {
	due := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	day, hour := 24*time.Hour, time.Hour
	both := []time.Duration{day, hour}
	for _, tc := range []struct {
		name   string
		now    time.Time
		before []time.Duration
		sent   []time.Duration
		want   time.Duration
		wantOK bool
	}{
		{name: "before the first threshold", now: due.Add(-25 * hour), before: both},
		{name: "the largest crossed", now: due.Add(-23 * hour), before: both, want: day, wantOK: true},
		{name: "at the threshold", now: due.Add(-day), before: both, want: day, wantOK: true},
		{name: "sent for this due time", now: due.Add(-23 * hour), before: both, sent: []time.Duration{day}},
		{name: "the next threshold after one sent", now: due.Add(-30 * time.Minute), before: both, sent: []time.Duration{day}, want: hour, wantOK: true},
		{name: "both crossed at once: the smallest only", now: due.Add(-30 * time.Minute), before: both, want: hour, wantOK: true},
		{name: "the smallest sent", now: due.Add(-30 * time.Minute), before: both, sent: []time.Duration{day, hour}},
		{name: "due already", now: due, before: both},
		{name: "no due time", now: due, before: both},
		{name: "no thresholds", now: due.Add(-time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := due
			if tc.name == "no due time" {
				d = time.Time{}
			}
			got, ok := Next(d, tc.now, tc.before, tc.sent)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Next = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// A due time that moves re-arms: the thresholds sent for the old one do
// not count for the new, which a record keys them by.
func TestNextRearmsOnAMovedDueTime(t *testing.T) {
	due := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := due.Add(-30 * time.Minute)
	before := []time.Duration{time.Hour}
	sent := Crossed(due, now, before)
	if _, ok := Next(due, now, before, sent); ok {
		t.Fatal("warned twice for one due time")
	}
	moved := due.Add(2 * time.Hour)
	if _, ok := Next(moved, now, before, nil); ok {
		t.Fatal("warned at once for a due time moved past the threshold")
	}
	later := moved.Add(-59 * time.Minute)
	if got, ok := Next(moved, later, before, nil); !ok || got != time.Hour {
		t.Fatalf("Next for the moved due time = %v, %v; want 1h, true", got, ok)
	}
}

func TestCrossed(t *testing.T) {
	due := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	got := Crossed(due, due.Add(-30*time.Minute), []time.Duration{24 * time.Hour, time.Hour, 10 * time.Minute})
	if want := []time.Duration{24 * time.Hour, time.Hour}; !slices.Equal(got, want) {
		t.Fatalf("Crossed = %v, want %v", got, want)
	}
}
