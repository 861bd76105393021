package sweep

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/report"
)

// A waiting entry is logged at debug level, unless it was warned
// (policies[].warnBefore): that one changed the record and told someone.
func TestLogDecisionLevels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry report.Entry
		want  string
	}{
		{name: "waiting", entry: report.Entry{State: report.StateWaiting}, want: "level=DEBUG"},
		{name: "waiting, warned", entry: report.Entry{State: report.StateWaiting, Warning: &report.Warning{Due: time.Now()}}, want: "level=INFO"},
		{name: "failed", entry: report.Entry{State: report.StateFailed}, want: "level=ERROR"},
		{name: "fired", entry: report.Entry{State: report.StateFired}, want: "level=INFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := &Sweeper{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			s.logDecision(t.Context(), tc.entry)
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("logged %q, want %s", buf.String(), tc.want)
			}
		})
	}
}
