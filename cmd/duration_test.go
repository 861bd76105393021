package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestDurationValue(t *testing.T) {
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
		if err := (*durationValue)(&d).Set(s); err != nil || d != want {
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
		if err := (*durationValue)(&d).Set(s); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: %v (%v), want an error saying %q", s, d, err, wantErr)
		}
	}
	// Printed as Go does, led by whole days, each the way it parses back;
	// zero as 0, which help shows as no default.
	for d, want := range map[time.Duration]string{
		0:                                "0",
		10 * time.Second:                 "10s",
		time.Minute:                      "1m0s",
		10 * time.Minute:                 "10m0s",
		720 * time.Hour:                  "30d",
		36*time.Hour + 90*time.Second:    "1d12h1m30s",
		1500 * time.Millisecond:          "1.5s",
		time.Hour + 250*time.Microsecond: "1h0m0.00025s",
	} {
		v := durationValue(d)
		var back time.Duration
		if got := v.String(); got != want || (*durationValue)(&back).Set(got) != nil || back != d {
			t.Errorf("%v printed %q (parsed back %v), want %q", d, got, back, want)
		}
	}
}

// Every duration flag of every command takes days and weeks: each is a
// durationValue, and hold's --for 2d holds for 48 hours.
func TestEveryDurationFlagTakesDays(t *testing.T) {
	var visit func(c *cobra.Command)
	seen := 0
	visit = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Value.(*durationValue); ok {
				seen++
			} else if f.Value.Type() == "duration" {
				t.Errorf("%s --%s is a duration flag that takes no days", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCommand(nil, nil))
	if seen < 8 {
		t.Errorf("%d duration flags seen, want hold's, wake's and sweep's at least", seen)
	}
	for args, want := range map[string]string{
		"hold ns --dry-run --for 2d":               "would be held until " + time.Now().Add(48*time.Hour).UTC().Format("2006-01-02"),
		"wake ns --dry-run --for 1d12h":            "would be woken until " + time.Now().Add(36*time.Hour).UTC().Format("2006-01-02"),
		"hold ns --dry-run --for 31d":              "more than --max-hold 720h0m0s ahead",
		"hold ns --dry-run --for -1d":              `invalid argument "-1d" for "--for" flag: negative`,
		"hold ns --dry-run --for 1w --max-hold 1w": "would be held until",
	} {
		var stdout, stderr bytes.Buffer
		Execute(t.Context(), strings.Fields(args), &stdout, &stderr)
		if out := stdout.String() + stderr.String(); !strings.Contains(out, want) {
			t.Errorf("nsman %s: %q, want %q", args, out, want)
		}
	}
}
