package cmd

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/nsman/nsman/internal/console"
)

// newLogger builds the slog logger the commands pass down.
func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	if format == "" {
		format = "text"
		if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			format = "json"
		} else if console.IsTerminal(w) {
			// A person reads it: short lines, as kubectl's warnings.
			return slog.New(console.NewHandler(w, lvl)), nil
		}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want json or text", format)}
}
