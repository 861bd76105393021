// Package docgen keeps the generated part of a Markdown file, the text
// between two marker lines: a test compares it with what the code
// generates and fails when it is stale, or with update rewrites it (make
// docs). docs/flags.md and docs/reference.md are kept so.
package docgen

import (
	"os"
	"strings"
	"testing"
)

// Section fails t unless the text of path between the lines start and end
// is want; with update it writes want there instead. what names the
// section in the failure.
func Section(t testing.TB, path, start, end, what, want string, update bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	from := strings.Index(doc, start)
	to := strings.Index(doc, end)
	if from < 0 || to < from {
		t.Fatalf("%s has no %s between %q and %q", path, what, start, end)
	}
	from += len(start)
	if doc[from:to] == want {
		return
	}
	if update {
		if err := os.WriteFile(path, []byte(doc[:from]+want+doc[to:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("the %s in %s is out of date: run make docs\n--- want\n%s", what, path, want)
}
