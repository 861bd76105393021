// Package console is what nsman writes for a person at a terminal rather
// than for a program: whether a writer is a terminal and may take colour
// (not with NO_COLOR, --no-color, or a file or pipe), the short log lines
// a terminal gets in place of structured ones, and the progress line of a
// long run. Where nothing reads the output but a program (a pod's log, a
// pipe, --log-format given), the commands keep it structured; this package
// knows nothing of them.
package console
