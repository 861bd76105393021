package cmd

import (
	"path/filepath"
	"testing"
	"time"
)

// examplesAt is when the examples are judged: the time they are written
// for (their windows' dates are past some day).
var examplesAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// TestExamplesAreValid keeps the shipped examples in line with what nsman
// accepts: each file parses, holds at least one NamespaceManager, and every
// manager is valid.
func TestExamplesAreValid(t *testing.T) {
	dir := filepath.Join("..", "examples")
	files, _, err := manifestsInDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			report, err := validateManifestFile(file, examplesAt)
			if err != nil {
				t.Fatal(err)
			}
			if report.managers == 0 {
				t.Errorf("no NamespaceManager in %s", file)
			}
			for _, m := range report.invalid {
				for _, e := range m.errs {
					t.Errorf("%s: %s: %s", file, m.ref, describeFieldError(e))
				}
			}
		})
	}

	t.Run("validate command", func(t *testing.T) {
		code, stdout, stderr := runValidate(t, "", "-f", dir)
		if code != ExitOK {
			t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitOK, stdout, stderr)
		}
	})
}
