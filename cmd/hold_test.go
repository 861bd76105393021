package cmd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/status"
)

// nsman hold writes the annotation at now + --for or --until, removes it
// with --release, and refuses anything but exactly one of them, a time
// past, or one further ahead than --max-hold (which a sweep would ignore).
// The merge patch is what execute.Hold sends.
func TestHoldPatch(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 500, time.UTC)
	key := `"` + status.HoldAnnotation + `"`
	tests := []struct {
		name string
		o    untilOptions
		want string
	}{
		{name: "for", o: untilOptions{forD: 48 * time.Hour}, want: `{"metadata":{"annotations":{` + key + `:"2026-11-25T12:00:00Z"}}}`},
		{name: "until", o: untilOptions{untilTime: "2026-12-04T19:00:00+01:00"}, want: `{"metadata":{"annotations":{` + key + `:"2026-12-04T18:00:00Z"}}}`},
		{name: "release", o: untilOptions{release: true}, want: `{"metadata":{"annotations":{` + key + `:null}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.now, tt.o.maxHold = func() time.Time { return now }, decide.DefaultMaxHold
			until, err := tt.o.until()
			if err != nil {
				t.Fatal(err)
			}
			got, err := execute.Hold(t.Context(), cluster.Clients{}, "ns", "", until, true)
			if err != nil || string(got) != tt.want {
				t.Errorf("patch %s (%v), want %s", got, err, tt.want)
			}
		})
	}
	for name, o := range map[string]untilOptions{
		"none":         {},
		"two":          {forD: time.Hour, release: true},
		"bad until":    {untilTime: "tomorrow"},
		"negative for": {forD: -time.Hour},
		"past until":   {untilTime: "2026-11-22T12:00:00Z"},
		"beyond max":   {forD: 721 * time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			o.now, o.maxHold = func() time.Time { return now }, decide.DefaultMaxHold
			var usage usageError
			if _, err := o.until(); !errors.As(err, &usage) {
				t.Errorf("error %v, want a usage error", err)
			}
		})
	}
}

// --max-hold 0 is the default, as for a sweep: a hold of two days is
// written, one beyond 720h refused.
func TestHoldMaxHoldZeroIsTheDefault(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	o := untilOptions{forD: 48 * time.Hour, now: func() time.Time { return now }}
	if got, err := o.until(); err != nil || !got.Equal(now.Add(48*time.Hour)) {
		t.Errorf("--for 48h --max-hold 0: %v, %v; want the hold written", got, err)
	}
	o.forD = decide.DefaultMaxHold + time.Hour
	if _, err := o.until(); err == nil || !strings.Contains(err.Error(), "more than --max-hold 30d ahead") {
		t.Errorf("--for 721h --max-hold 0: %v, want it refused beyond the default", err)
	}
}
