package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// checkGolden fails when got, what a user reads of what (a command and
// its format), differs from the golden file path; with -update (make
// docs) it writes the file instead, and its directory.
func checkGolden(t *testing.T, path, what string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v (make docs writes it)", what, err)
		return
	}
	if diff := firstDifference(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from %s (make docs rewrites it; review the change): %s", what, path, diff)
	}
}
