package cmd

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/duration"
	"github.com/nsman/nsman/policy/durtext"
)

// Every duration flag of every command takes days and weeks: each is a
// durationValue, and hold's --for 2d holds for 48 hours.
func TestEveryDurationFlagTakesDays(t *testing.T) {
	var visit func(c *cobra.Command)
	seen := 0
	visit = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Value.(*duration.Value); ok {
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
		"hold ns --dry-run --for 31d":              "more than --max-hold 30d ahead",
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

// A duration flag's value (its default in help, docs/flags.md and the flags
// taken from the CronJob) reads as messages say durations: internal/duration
// prints it on its own, importing nothing of nsman, the way durtext.Format
// does.
func TestDurationFlagsPrintAsMessagesSay(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 250 * time.Millisecond, 1500 * time.Millisecond, 10 * time.Second, 90 * time.Second,
		time.Minute, 10 * time.Minute, time.Hour + 250*time.Microsecond, 150 * time.Minute, 24 * time.Hour, 36*time.Hour + 90*time.Second,
		720 * time.Hour, 106751*24*time.Hour + 23*time.Hour, math.MaxInt64} {
		if got, want := (*duration.Value)(&d).String(), durtext.Format(d); got != want {
			t.Errorf("%d: a flag prints %q, messages say %q", int64(d), got, want)
		}
	}
}
