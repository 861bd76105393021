// Package layout holds no code, only the test of the layout's rules: which
// package may import which, the one package that sends mutating API
// requests, and the bounds on a type's methods, a function's lines and a
// package's lines. The rules are issue 32's; docs/design.md says why the
// packages are split as they are. A test of its own package makes a change
// that breaks a rule fail the unit tests, wherever the change is made.
package layout
