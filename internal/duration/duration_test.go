package duration

import (
	"math"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

func TestValue(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"0":        0,
		"90s":      90 * time.Second,
		"1h30m":    90 * time.Minute,
		"2d":       48 * time.Hour,
		"1w":       7 * 24 * time.Hour,
		"1d12h":    36 * time.Hour,
		"1w2d3h4m": 9*24*time.Hour + 3*time.Hour + 4*time.Minute,
		"0d":       0,
		"1.5h":     90 * time.Minute,
		"106751d":  106751 * 24 * time.Hour,
	} {
		var d time.Duration
		if err := (*Value)(&d).Set(s); err != nil || d != want {
			t.Errorf("%q: %v (%v), want %v", s, d, err, want)
		}
	}
	for s, wantErr := range map[string]string{
		"":                      "want a duration",
		"2":                     "want a duration",
		"d":                     "want a duration",
		"1.5d":                  "want a duration",
		"2d1w":                  "want a duration",
		"two days":              "want a duration",
		"-1h":                   "negative",
		"-2d":                   "negative",
		"1d-5h":                 "negative",
		"106752d":               "too long",
		"15250w285d":            "too long",
		"106751d24h":            "too long",
		"99999999999999999999d": "too long",
		"3000000h":              "too long",
	} {
		var d time.Duration
		if err := (*Value)(&d).Set(s); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: %v (%v), want an error saying %q", s, d, err, wantErr)
		}
	}
	// Printed as users write durations, led by whole days, without Go's
	// zero units, each the way it parses back; zero as 0, which help shows
	// as no default.
	for d, want := range map[time.Duration]string{
		0:                                "0",
		10 * time.Second:                 "10s",
		time.Minute:                      "1m",
		10 * time.Minute:                 "10m",
		720 * time.Hour:                  "30d",
		36 * time.Hour:                   "1d12h",
		36*time.Hour + 90*time.Second:    "1d12h1m30s",
		1500 * time.Millisecond:          "1.5s",
		time.Hour + 250*time.Microsecond: "1h250µs",
	} {
		v := Value(d)
		var back time.Duration
		if got := v.String(); got != want || (*Value)(&back).Set(got) != nil || back != d {
			t.Errorf("%v printed %q (parsed back %v), want %q", d, got, back, want)
		}
	}
}

// Whatever a Value prints, Parse reads back as it.
func TestParseReadsStringBack(t *testing.T) {
	f := func(n int64) bool {
		d := Value(n)
		if d < 0 {
			d = -d
		}
		back, err := Parse(d.String())
		return d < 0 || err == nil && back == time.Duration(d)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	for _, d := range []Value{Value(time.Nanosecond), Value(24 * time.Hour), Value(7 * 24 * time.Hour), Value(106751 * 24 * time.Hour), math.MaxInt64} {
		if back, err := Parse(d.String()); err != nil || back != time.Duration(d) {
			t.Errorf("%q parsed to %v (%v), want %v", d.String(), back, err, time.Duration(d))
		}
	}
}
