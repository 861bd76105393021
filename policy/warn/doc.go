// Package warn is when a policy with a due time tells its subject before
// it acts: its warnBefore thresholds, parsed and bounded (Parse), and which
// threshold a sweep warns at, once per threshold and per due time (Next).
// It makes no request and imports nothing of nsman, so that policy, which
// is at its bound, reads the thresholds without growing.
package warn
