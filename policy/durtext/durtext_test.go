package durtext

import (
	"math"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{90 * time.Second, "1m30s"},
		{time.Minute, "1m"},
		{10 * time.Minute, "10m"},
		{time.Hour, "1h"},
		{150 * time.Minute, "2h30m"},
		{2*time.Hour + 5*time.Second, "2h5s"},
		{24 * time.Hour, "1d"},
		{36 * time.Hour, "1d12h"},
		{720 * time.Hour, "30d"},
		{7 * 24 * time.Hour, "7d"},
		{36*time.Hour + 90*time.Second, "1d12h1m30s"},
		{1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"},
		{2 * time.Microsecond, "2µs"},
		{time.Nanosecond, "1ns"},
		{time.Minute + 500*time.Millisecond, "1m500ms"},
		{time.Hour + 250*time.Microsecond, "1h250µs"},
		{-90 * time.Minute, "-1h30m"},
		{math.MaxInt64, "106751d23h47m16.854775807s"},
		{math.MinInt64, "-106751d23h47m16.854775808s"},
	} {
		if got := Format(tt.d); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", int64(tt.d), got, tt.want)
		}
	}
}

// What Format says without days is a Go duration, the same one.
func TestFormatParsesBackWithoutDays(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 999 * time.Millisecond, 59 * time.Second, time.Hour + time.Millisecond, 23*time.Hour + 59*time.Minute + 59*time.Second, -5 * time.Minute} {
		back, err := time.ParseDuration(Format(d))
		if err != nil || back != d {
			t.Errorf("Format(%v) = %q, which parses to %v (%v)", d, Format(d), back, err)
		}
	}
}
