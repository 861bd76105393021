package links

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary keeps the package importable by a
// receiver without client-go or anything else of nsman's: every package it
// depends on, transitively, must be in the standard library.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	goCmd, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), goCmd, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	const self = "github.com/nsman/nsman/links"
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, self) {
		t.Fatalf("go list -deps printed %q, which lacks the package itself: the check is not looking at it", deps)
	}
	for _, dep := range deps {
		if dep != self {
			t.Errorf("%s depends on %s, which is not in the standard library", self, dep)
		}
	}
}
