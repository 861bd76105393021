package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"unicode"
)

// clearLine takes the cursor to the start of the line and clears it.
const clearLine = "\r\x1b[K"

// Handler writes a log record as a short line for a person at a terminal,
// as kubectl writes its warnings: "Warning: MESSAGE (key=value, ...)",
// "Error: ...", and an info or debug record as its message and
// attributes alone; no time, no level key. A program reading the logs
// gets slog's text or JSON handler instead.
type Handler struct {
	w     io.Writer
	mu    *sync.Mutex
	level slog.Leveler
	attrs []slog.Attr
	group string
}

// NewHandler returns a Handler writing records of level or above to w.
func NewHandler(w io.Writer, level slog.Leveler) *Handler {
	return &Handler{w: w, mu: &sync.Mutex{}, level: level}
}

// Enabled reports whether a record of level l is written.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle writes r as one line.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(clearLine) // a progress line drawn there (Progress)
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("Error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("Warning: ")
	}
	b.WriteString(r.Message)
	attrs := make([]string, 0, len(h.attrs)+r.NumAttrs())
	for _, a := range h.attrs {
		attrs = append(attrs, attrText(a))
	}
	r.Attrs(func(a slog.Attr) bool {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		attrs = append(attrs, attrText(a))
		return true
	})
	if len(attrs) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(attrs, ", "))
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a Handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], h.grouped(attrs)...)
	return &c
}

// WithGroup returns a Handler that puts the attributes after it in group
// name, as "name.key".
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = strings.TrimPrefix(h.group+"."+name, ".")
	return &c
}

// grouped are attrs, their keys under h's group.
func (h *Handler) grouped(attrs []slog.Attr) []slog.Attr {
	if h.group == "" {
		return attrs
	}
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = slog.Attr{Key: h.group + "." + a.Key, Value: a.Value}
	}
	return out
}

// attrText is a as key=value, a value with a space, a quote or a control
// character quoted (a tenant's name reaches the terminal escaped).
func attrText(a slog.Attr) string {
	v := a.Value.Resolve().String()
	if v == "" || strings.ContainsFunc(v, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("\"=,()", r)
	}) {
		v = fmt.Sprintf("%q", v)
	}
	return a.Key + "=" + v
}
