package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built as go build builds it, without make build's -ldflags,
// names the commit it was built from (Go stamps the module's version, here
// a pseudo-version of the checkout's commit): not dev.
func TestVersionWithoutLdflags(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v (the test runs in a git checkout of nsman)", err)
	}
	commit := strings.TrimSpace(string(head))[:12]
	// -buildvcs=auto is go build's default, which a GOFLAGS of the
	// machine's may have turned off.
	bin := filepath.Join(t.TempDir(), "nsman")
	if out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "github.com/nsman/nsman/cmd/nsman").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stdout, stderr, code := run(t, bin, "version")
	if code != 0 || !strings.HasPrefix(stdout, "nsman ") || !strings.Contains(strings.Fields(stdout)[1], commit) {
		t.Errorf("nsman version: exit %d, %q (stderr %q); want the version to name commit %s", code, stdout, stderr, commit)
	}
}
