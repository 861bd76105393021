package nsmantest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/test/cluster"
)

// promtoolModule is the module that test/tools/promtool pins and
// test/tools/build.sh builds promtool from.
const promtoolModule = "github.com/prometheus/prometheus"

// promtoolTimeout bounds one run of promtool: checking or testing a few
// rules takes well under a second.
const promtoolTimeout = time.Minute

// Promtool runs the pinned promtool with args, in the repository's root,
// and returns its output; it fails t when promtool fails.
func Promtool(t testing.TB, args ...string) string {
	t.Helper()
	out, err := RunPromtool(t, args...)
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// RunPromtool runs the pinned promtool with args, in the repository's
// root, and returns its output and error: for tests that want it to fail.
func RunPromtool(t testing.TB, args ...string) (string, error) {
	t.Helper()
	dir, err := cluster.ToolDir("promtool", promtoolModule, "promtool")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "promtool")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(cluster.MissingTool(bin))
	}
	ctx, cancel := context.WithTimeout(context.Background(), promtoolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = RepoRoot()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}
