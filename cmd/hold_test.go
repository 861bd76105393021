package cmd

import (
	"errors"
	"testing"
	"time"

	"github.com/nsman/nsman/sweep"
)

// nsman hold's patch sets the annotation to now + --for or --until, removes
// it with --release, and refuses anything but exactly one of them.
func TestHoldPatch(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 500, time.UTC)
	key := `"` + sweep.HoldAnnotation + `"`
	tests := []struct {
		name string
		o    holdOptions
		want string
	}{
		{name: "for", o: holdOptions{forD: 48 * time.Hour}, want: `{"metadata":{"annotations":{` + key + `:"2026-11-25T12:00:00Z"}}}`},
		{name: "until", o: holdOptions{until: "2026-12-24T19:00:00+01:00"}, want: `{"metadata":{"annotations":{` + key + `:"2026-12-24T18:00:00Z"}}}`},
		{name: "release", o: holdOptions{release: true}, want: `{"metadata":{"annotations":{` + key + `:null}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.now = func() time.Time { return now }
			got, _, err := tt.o.patch()
			if err != nil || string(got) != tt.want {
				t.Errorf("patch %s (%v), want %s", got, err, tt.want)
			}
		})
	}
	for name, o := range map[string]holdOptions{
		"none":         {},
		"two":          {forD: time.Hour, release: true},
		"bad until":    {until: "tomorrow"},
		"negative for": {forD: -time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			o.now = func() time.Time { return now }
			var usage usageError
			if _, _, err := o.patch(); !errors.As(err, &usage) {
				t.Errorf("error %v, want a usage error", err)
			}
		})
	}
}
