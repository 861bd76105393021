package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/duration"
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
