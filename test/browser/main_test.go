// Package browser tests nsman serve's pages in a real headless browser:
// Chromium from the distribution's packages (make browser installs it),
// driven from Go with chromedp, against nsman serve on a real control
// plane. Without Chromium the tests skip, saying so, except under CI
// (CI=true), where they fail: make test installs it there.
package browser

import (
	"os"
	"os/exec"
	"testing"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

var (
	shared   *cluster.Cluster
	prepared nsmantest.Prepared
)

func TestMain(m *testing.M) {
	nsmantest.RunInOwnNamespace()
	cluster.Main(m, cluster.APITier, &shared)
}

// setup prepares the shared control plane for nsman once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	return prepared.Env(t, shared)
}

// chromium is the path of Chromium, or the test skips (fails under CI).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: make test installs it (make browser) before the tests")
	}
	t.Skip("no chromium on PATH: the browser tests need Chromium (make browser, or apt-get install chromium)")
	return ""
}
