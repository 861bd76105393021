package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl (1.26 and later) completes 'kubectl nsman' by running
// kubectl_complete-nsman from PATH: the repository ships it executable,
// handing the words to nsman's completion, and the release and make
// install-plugin put it beside the binary.
func TestKubectlCompletionShipped(t *testing.T) {
	const script = "deploy/kubectl-plugin/kubectl_complete-nsman"
	info, err := os.Stat(filepath.Join("..", script))
	if err != nil || info.Mode().Perm()&0o111 != 0o111 {
		t.Fatalf("%s: %v, mode %v; want it executable by all", script, err, info.Mode())
	}
	for _, tt := range []struct{ path, want string }{
		{script, "#!/bin/sh\n"},
		{script, `exec kubectl-nsman __complete "$@"`},
		{".github/workflows/release.yml", "cp " + script + " dist/kubectl_complete-nsman"},
		{"Makefile", "ln -sf '$(CURDIR)/" + script + "' '$(PLUGIN_DIR)/kubectl_complete-nsman'"},
	} {
		if !strings.Contains(read(t, tt.path), tt.want) {
			t.Errorf("%s lacks %s", tt.path, tt.want)
		}
	}
}
