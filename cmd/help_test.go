package cmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// helpGoldenDir holds what each command's --help prints, a file a command
// (nsman.golden for the root, hold.golden, completion_bash.golden), so
// that a change in what users read is seen in review. `make docs` (go test
// ./cmd -run TestHelpGolden -update) rewrites them.
var helpGoldenDir = filepath.Join("testdata", "help")

// TestHelpGolden fails when a command's --help differs from its golden
// file, when a command has none, and when a file names no command.
func TestHelpGolden(t *testing.T) {
	if *update {
		if err := os.MkdirAll(helpGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := newRootCommand(io.Discard, io.Discard)
	root.InitDefaultCompletionCmd() // cobra adds it when it runs
	known := map[string]bool{}
	for _, path := range commandPaths(root, nil) {
		name := "nsman.golden"
		if len(path) > 0 {
			name = strings.Join(path, "_") + ".golden"
		}
		known[name] = true
		var stdout, stderr bytes.Buffer
		if code := Execute(t.Context(), append(path, "--help"), &stdout, &stderr); code != ExitOK {
			t.Fatalf("nsman %s --help: exit %d, %s", strings.Join(path, " "), code, stderr.String())
		}
		checkGolden(t, filepath.Join(helpGoldenDir, name), "nsman "+strings.Join(path, " ")+" --help", stdout.Bytes())
	}
	entries, err := os.ReadDir(helpGoldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if known[e.Name()] {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(helpGoldenDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is the help of no command (make docs removes it)", filepath.Join(helpGoldenDir, e.Name()))
	}
}

// commandPaths are the arguments that name c's subcommands and theirs,
// from the root (nil), each under prefix; cobra's help command aside.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	paths := [][]string{prefix}
	for _, sub := range c.Commands() {
		if sub.Name() != "help" && !sub.Hidden {
			paths = append(paths, commandPaths(sub, append(prefix[:len(prefix):len(prefix)], sub.Name()))...)
		}
	}
	return paths
}

// firstDifference says where got first differs from want, line by line,
// or "" when they are the same.
func firstDifference(want, got string) string {
	wantLines, gotLines := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wantLines), len(gotLines)) {
		var w, g string
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if w != g || i >= len(wantLines) || i >= len(gotLines) {
			return "line " + strconv.Itoa(i+1) + ":\n  golden: " + strconv.Quote(w) + "\n  now:    " + strconv.Quote(g)
		}
	}
	return ""
}
