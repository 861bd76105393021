package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// allowModifiedEnv=1 lets a run write BENCHMARKS.md from a tree with
// uncommitted changes; the document's header then says the tree was
// modified and lists the changes.
const allowModifiedEnv = "NSMAN_BENCH_ALLOW_MODIFIED"

// treeState is the checkout a run measures.
type treeState struct {
	// Commit is `git rev-parse HEAD`.
	Commit string
	// Describe is `git describe --always --dirty`: it says dirty for
	// uncommitted changes to tracked files only.
	Describe string
	// Changes are the lines of `git status --porcelain`: changes to
	// tracked files, and untracked files that are not ignored, which a
	// build of the package they sit in compiles too.
	Changes []string
	// Diff is a digest of `git diff HEAD`, so that further edits to a
	// file already modified count as a change of state.
	Diff string
}

// modified says whether the tree differs from Commit.
func (s treeState) modified() bool { return len(s.Changes) > 0 }

// String names the state for the document and for messages.
func (s treeState) String() string {
	if !s.modified() {
		return fmt.Sprintf("commit %s (`git describe --always --dirty`: %s), no uncommitted changes", s.Commit, s.Describe)
	}
	return fmt.Sprintf("commit %s (`git describe --always --dirty`: %s) with uncommitted changes (%s)", s.Commit, s.Describe, strings.Join(s.Changes, "; "))
}

// git runs git in dir and returns its standard output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// readTree reads the state of the git checkout at dir.
func readTree(dir string) (treeState, error) {
	var s treeState
	out, err := git(dir, "rev-parse", "HEAD")
	if err != nil {
		return s, err
	}
	s.Commit = strings.TrimSpace(out)
	if out, err = git(dir, "describe", "--always", "--dirty"); err != nil {
		return s, err
	}
	s.Describe = strings.TrimSpace(out)
	if out, err = git(dir, "status", "--porcelain", "--untracked-files=all"); err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			s.Changes = append(s.Changes, line)
		}
	}
	if out, err = git(dir, "diff", "HEAD", "--binary"); err != nil {
		return s, err
	}
	sum := sha256.Sum256([]byte(out))
	s.Diff = hex.EncodeToString(sum[:8])
	return s, nil
}

// same says whether two reads of a tree found it in the same state.
func (s treeState) same(o treeState) bool {
	return s.Commit == o.Commit && s.Diff == o.Diff && slices.Equal(s.Changes, o.Changes)
}

// benchmarksFile is the repository's BENCHMARKS.md under root.
func benchmarksFile(root string) string { return filepath.Join(root, "BENCHMARKS.md") }

// isBenchmarksFile says whether out names root's BENCHMARKS.md.
func isBenchmarksFile(out, root string) bool {
	a, err1 := filepath.Abs(out)
	b, err2 := filepath.Abs(benchmarksFile(root))
	if err1 != nil || err2 != nil {
		return out == benchmarksFile(root)
	}
	if ra, err := filepath.EvalSymlinks(filepath.Dir(a)); err == nil {
		a = filepath.Join(ra, filepath.Base(a))
	}
	if rb, err := filepath.EvalSymlinks(filepath.Dir(b)); err == nil {
		b = filepath.Join(rb, filepath.Base(b))
	}
	return a == b
}

// mayWrite says whether a run may write its document: BENCHMARKS.md only
// from a complete run (partial lists what made it partial) on an unmodified
// tree, or on a modified one with allowModified; any other file always.
func mayWrite(official bool, partial []string, tree treeState, allowModified bool) error {
	if !official {
		return nil
	}
	if len(partial) > 0 {
		return fmt.Errorf("BENCHMARKS.md is written by a complete run (make bench); this run is partial (%s): name another file with NSMAN_BENCH_OUT",
			strings.Join(partial, ", "))
	}
	if tree.modified() && !allowModified {
		return fmt.Errorf("refusing to write BENCHMARKS.md from a modified tree: %s has uncommitted changes:\n  %s\n"+
			"commit or stash them and run make bench again; %s=1 writes it anyway and says so in its header, NSMAN_BENCH_OUT writes another file",
			tree.Commit, strings.Join(tree.Changes, "\n  "), allowModifiedEnv)
	}
	return nil
}

// versionOf is the version the generator stamps on the nsman binary it
// builds from the tree in state s: `nsman version` then names the tree.
func versionOf(s treeState) string {
	v := s.Describe
	if s.modified() && !strings.HasSuffix(v, "-dirty") {
		v += "-dirty" // untracked files only: git describe does not count them
	}
	return v
}

// flagDefault matches a flag's line in `nsman sweep --help` that states
// its default.
var flagDefault = regexp.MustCompile(`^\s*(?:-\w, )?--([\w-]+) \S+\s.*\(default ([^)]+)\)\s*$`)

// helpDefaults reads the default of each flag from a command's --help.
func helpDefaults(help string) map[string]string {
	defaults := map[string]string{}
	for line := range strings.SplitSeq(help, "\n") {
		if m := flagDefault.FindStringSubmatch(line); m != nil {
			defaults[m[1]] = strings.Trim(m[2], `"`)
		}
	}
	return defaults
}

// buildNsman builds nsman from the tree at root into bin, stamped with the
// tree's version, and checks that the binary reports it; it returns the
// binary's `nsman version` line and the defaults of its sweep's flags.
func buildNsman(root, bin string, tree treeState) (version string, defaults map[string]string, err error) {
	want := versionOf(tree)
	build := exec.Command("go", "build", "-ldflags", "-X github.com/nsman/nsman/cmd.version="+want, "-o", bin, "./cmd/nsman")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("go build ./cmd/nsman: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s version: %w", bin, err)
	}
	version = strings.TrimSpace(string(out))
	if f := strings.Fields(version); len(f) < 2 || f[1] != want {
		return "", nil, fmt.Errorf("%s version = %q, want version %s: the binary is not the one just built from %s", bin, version, want, root)
	}
	help, err := exec.Command(bin, "sweep", "--help").Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s sweep --help: %w", bin, err)
	}
	return version, helpDefaults(string(help)), nil
}

// The tests below need no control plane.

// gitRepo makes a git repository in a temporary directory with one commit
// of main.go and a .gitignore that ignores bin/.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the benchmark generator needs git: %v", err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("init", "-q")
	write(t, dir, "main.go", "package main\n")
	write(t, dir, ".gitignore", "/bin/\n")
	run("add", ".")
	run("commit", "-q", "-m", "first")
	return dir
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, dir string) treeState {
	t.Helper()
	s, err := readTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTreeCleanAndModified(t *testing.T) {
	dir := gitRepo(t)
	out := benchmarksFile(dir)

	clean := mustRead(t, dir)
	if clean.modified() || len(clean.Commit) != 40 || !strings.HasPrefix(clean.Commit, clean.Describe) {
		t.Fatalf("fresh commit: %+v, want unmodified, a 40-digit commit and describe its prefix", clean)
	}
	if err := mayWrite(true, nil, clean, false); err != nil {
		t.Errorf("clean tree: %v", err)
	}
	if v := versionOf(clean); v != clean.Describe {
		t.Errorf("clean tree stamps %q, want %q", v, clean.Describe)
	}

	// An ignored file leaves the tree clean.
	write(t, dir, "bin/nsman", "binary")
	if s := mustRead(t, dir); s.modified() || !s.same(clean) {
		t.Errorf("ignored file: %+v, want the clean state", s)
	}

	// A change to a tracked file: refused for BENCHMARKS.md, unless
	// allowed; any other file may be written, and says what changed.
	write(t, dir, "main.go", "package main\n\nfunc main() {}\n")
	dirty := mustRead(t, dir)
	if !dirty.modified() || dirty.same(clean) || !strings.HasSuffix(dirty.Describe, "-dirty") {
		t.Fatalf("tracked change: %+v, want modified, another state, describe -dirty", dirty)
	}
	err := mayWrite(isBenchmarksFile(out, dir), nil, dirty, false)
	if err == nil || !strings.Contains(err.Error(), "refusing to write BENCHMARKS.md from a modified tree") ||
		!strings.Contains(err.Error(), "main.go") || !strings.Contains(err.Error(), allowModifiedEnv) {
		t.Errorf("tracked change, BENCHMARKS.md: %v, want a refusal naming main.go and %s", err, allowModifiedEnv)
	}
	if err := mayWrite(true, nil, dirty, true); err != nil {
		t.Errorf("tracked change, allowed: %v", err)
	}
	if err := mayWrite(isBenchmarksFile(filepath.Join(t.TempDir(), "scratch.md"), dir), nil, dirty, false); err != nil {
		t.Errorf("tracked change, another file: %v", err)
	}
	if !strings.Contains(dirty.String(), "uncommitted changes") || !strings.Contains(dirty.String(), "main.go") {
		t.Errorf("dirty.String() = %q, want the changes named", dirty)
	}

	// Editing a file already modified is a change of state.
	write(t, dir, "main.go", "package main\n\nfunc main() { println() }\n")
	if again := mustRead(t, dir); again.same(dirty) {
		t.Errorf("a further edit of main.go left the state the same: %+v", again)
	}

	// An untracked file is built too: the tree counts as modified, and the
	// binary's version says so though git describe does not.
	write(t, dir, "main.go", "package main\n")
	write(t, dir, "extra.go", "package main\n")
	untracked := mustRead(t, dir)
	if !untracked.modified() || strings.HasSuffix(untracked.Describe, "-dirty") || !strings.HasSuffix(versionOf(untracked), "-dirty") {
		t.Errorf("untracked file: %+v (version %q), want modified, describe clean, version -dirty", untracked, versionOf(untracked))
	}
	if err := mayWrite(true, nil, untracked, false); err == nil || !strings.Contains(err.Error(), "extra.go") {
		t.Errorf("untracked file, BENCHMARKS.md: %v, want a refusal naming extra.go", err)
	}
}

func TestMayWritePartial(t *testing.T) {
	dir := gitRepo(t)
	clean := mustRead(t, dir)
	err := mayWrite(true, []string{"NSMAN_BENCH_SIZES=1000"}, clean, true)
	if err == nil || !strings.Contains(err.Error(), "NSMAN_BENCH_SIZES=1000") || !strings.Contains(err.Error(), "NSMAN_BENCH_OUT") {
		t.Errorf("partial run to BENCHMARKS.md: %v, want a refusal", err)
	}
	if err := mayWrite(false, []string{"NSMAN_BENCH_SIZES=1000"}, clean, false); err != nil {
		t.Errorf("partial run to another file: %v", err)
	}
}

func TestIsBenchmarksFile(t *testing.T) {
	dir := t.TempDir()
	for out, want := range map[string]bool{
		filepath.Join(dir, "BENCHMARKS.md"):              true,
		filepath.Join(dir, "sub", "..", "BENCHMARKS.md"): true,
		filepath.Join(dir, "bench.md"):                   false,
		filepath.Join(t.TempDir(), "BENCHMARKS.md"):      false,
	} {
		if got := isBenchmarksFile(out, dir); got != want {
			t.Errorf("isBenchmarksFile(%s) = %v, want %v", out, got, want)
		}
	}
}

func TestHelpDefaults(t *testing.T) {
	help := `Flags:
      --burst int                         API requests the client may burst above --qps (default 1000)
      --concurrency int                   managers handled at once (default 16)
  -o, --output string                     report format (default "text")
      --qps float32                       API requests per second the client may make (default 500)
      --dry-run                           change nothing
`
	got := helpDefaults(help)
	for flag, want := range map[string]string{"burst": "1000", "concurrency": "16", "qps": "500", "output": "text"} {
		if got[flag] != want {
			t.Errorf("default of --%s = %q, want %q (%v)", flag, got[flag], want, got)
		}
	}
	if _, ok := got["dry-run"]; ok {
		t.Errorf("--dry-run states no default, got %v", got)
	}
}
