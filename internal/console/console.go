package console

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal: an *os.File (or any writer
// with a file descriptor) that term says is one.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// Color reports whether what is written to w may be coloured: w is a
// terminal, off (--no-color) is false and NO_COLOR is unset or empty
// (https://no-color.org).
func Color(w io.Writer, off bool) bool {
	return colorFor(IsTerminal(w), off, os.Getenv("NO_COLOR"))
}

// colorFor is Color's decision, given whether the writer is a terminal and
// what NO_COLOR holds.
func colorFor(terminal, off bool, noColor string) bool {
	return terminal && !off && noColor == ""
}
