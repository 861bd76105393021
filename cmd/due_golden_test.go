package cmd

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/nsman/nsman/due"
	"github.com/nsman/nsman/internal/printer"
)

// dueGoldenDir holds what nsman due prints of goldenDue, a file a format
// but JSON and YAML, so that a change in what users read is seen in
// review. `make docs` (go test ./cmd -run TestDueGolden -update) rewrites
// them.
var dueGoldenDir = filepath.Join("testdata", "due")

// TestDueGolden fails when what nsman due prints differs from its golden
// file.
func TestDueGolden(t *testing.T) {
	for _, format := range []string{printer.Text, printer.Wide, printer.Name} {
		var out, errs bytes.Buffer
		if err := (due.Options{Within: due.DefaultWithin, Output: format}).Print(&out, &errs, goldenDue()); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join(dueGoldenDir, format+".golden"), "nsman due -o "+format, out.Bytes())
	}
}

// goldenDue is what nsman due tells of a cluster: an action now, one due
// in an hour, one a hold puts off, one a window does, one a freeze at its
// due time puts past the time looked at, a rule's namespace, a webhook
// backing off, and one whose condition waits again.
func goldenDue() due.List {
	now := time.Date(2026, 11, 24, 9, 40, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	acts := func(d time.Duration) *time.Time { t := at(d); return &t }
	return due.List{Version: due.Version, Now: now, WithinSeconds: 86400, Items: []due.Item{
		{Namespace: "team-a", Name: "preview", Target: "team-a", Policy: "expire", Action: "DELETE", Due: now, ActsAt: acts(0), Reason: "TTL 1h elapsed at 2026-11-24T09:30:00Z"},
		{Namespace: "team-a", Name: "notify", Target: "team-a", Policy: "notify", Action: "WEBHOOK", Due: now, ActsAt: acts(20 * time.Minute),
			DelayedBy: []due.Delay{{By: due.ByBackoff, Until: at(20 * time.Minute)}}, Reason: "TTL 1h elapsed at 2026-11-24T09:00:00Z"},
		{Namespace: "team-b", Name: "ci", Target: "team-b", Policy: "expire", Action: "DELETE", Due: at(time.Hour), ActsAt: acts(time.Hour), Reason: "TTL 2h elapsed at 2026-11-24T10:40:00Z"},
		{Namespace: "platform", Name: "previews", Rule: true, Target: "pr-4711", Policy: "sleep", Action: "SLEEP", Due: at(2 * time.Hour), ActsAt: acts(2 * time.Hour), Reason: "idle for 4h"},
		{Namespace: "team-c", Name: "demo", Target: "team-c", Policy: "expire", Action: "DELETE", Due: at(3 * time.Hour), ActsAt: acts(5 * time.Hour),
			DelayedBy: []due.Delay{{By: due.ByHold, Until: at(5 * time.Hour)}}, Reason: "TTL 4h elapsed at 2026-11-24T12:40:00Z"},
		{Namespace: "team-d", Name: "nightly", Target: "team-d", Policy: "scale", Action: "SCALE_DOWN", Due: at(4 * time.Hour), ActsAt: acts(12*time.Hour + 20*time.Minute),
			DelayedBy: []due.Delay{{By: due.ByWindow, Until: at(12*time.Hour + 20*time.Minute)}}, Reason: "TTL 6h elapsed at 2026-11-24T13:40:00Z"},
		{Namespace: "team-e", Name: "release", Target: "team-e", Policy: "expire", Action: "DELETE", Due: at(6 * time.Hour), ActsAt: acts(50 * time.Hour),
			DelayedBy: []due.Delay{{By: due.ByFreeze, Until: at(50 * time.Hour)}}, Reason: "TTL 1d elapsed at 2026-11-24T15:40:00Z"},
		{Namespace: "team-f", Name: "idle", Target: "team-f", Policy: "idle", Due: at(8 * time.Hour),
			DelayedBy: []due.Delay{{By: due.ByCondition, Until: at(11 * time.Hour)}}, Reason: "not idle: pod web-1 created at 2026-11-24T16:00:00Z"},
	}}
}
