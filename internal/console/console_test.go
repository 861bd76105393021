package console

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file, a pipe or a buffer is no terminal, and takes no colour, whatever
// NO_COLOR and --no-color say.
func TestNoTerminalNoColor(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"file": f, "buffer": &bytes.Buffer{}} {
		if IsTerminal(w) || Color(w, false) {
			t.Errorf("%s taken for a terminal", name)
		}
	}
}

// The handler writes a line per record, over any progress line: a warning as kubectl writes one,
// its attributes after it, quoted where they would not read as one word,
// escaped where a control character would reach the terminal.
func TestHandlerShortLines(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(NewHandler(&out, slog.LevelInfo))
	log.Debug("not shown")
	log.Info("sweep started", "dryRun", true)
	log.With("manager", "team-a/ttl").Warn("action failed", "error", "scale Deployment/web: forbidden")
	log.WithGroup("notify").Error("not sent", "url", "https://hooks.example.com/\x1b[2J")
	want := clearLine + "sweep started (dryRun=true)\n" +
		clearLine + "Warning: action failed (manager=team-a/ttl, error=\"scale Deployment/web: forbidden\")\n" +
		clearLine + "Error: not sent (notify.url=\"https://hooks.example.com/\\x1b[2J\")\n"
	if out.String() != want {
		t.Errorf("logged:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A terminal takes colour unless --no-color, or NO_COLOR holds anything.
func TestColorFor(t *testing.T) {
	for _, c := range []struct {
		terminal, off bool
		noColor       string
		want          bool
	}{
		{true, false, "", true},
		{true, true, "", false},
		{true, false, "1", false},
		{false, false, "", false},
	} {
		if got := colorFor(c.terminal, c.off, c.noColor); got != c.want {
			t.Errorf("terminal %v, --no-color %v, NO_COLOR=%q: colour %v, want %v", c.terminal, c.off, c.noColor, got, c.want)
		}
	}
}

// The progress line shows once the run takes longer than its delay,
// redrawn in place, and is cleared when it stops; a run that stops first
// shows none.
func TestProgress(t *testing.T) {
	var out bytes.Buffer
	stop := progress(&out, "sweeping", func() string { return "3 API requests" }, 10*time.Millisecond, 10*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	stop()
	got := out.String()
	if !strings.HasPrefix(got, "\r\x1b[Ksweeping, 0s: 3 API requests\r\x1b[K") || !strings.HasSuffix(got, "3 API requests\r\x1b[K") {
		t.Errorf("progress wrote %q, want lines drawn in place, then cleared", got)
	}
	out.Reset()
	stop = progress(&out, "sweeping", func() string { return "" }, time.Hour, time.Hour)
	stop()
	if out.Len() > 0 {
		t.Errorf("a run that stopped before the delay wrote %q", out.String())
	}
	Progress(&out, true, "sweeping", func() string { return "" })()
	if out.Len() > 0 {
		t.Errorf("progress on a buffer, no terminal, wrote %q", out.String())
	}
}
