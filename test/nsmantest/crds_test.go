package nsmantest

import (
	"strings"
	"testing"
)

// Without make control-plane's copies in the cache, the GitOps CRDs are
// each named missing, with the target that fetches them.
func TestGitOpsCRDFilesNameMakeControlPlane(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	files, err := GitOpsCRDFiles()
	if err == nil {
		t.Fatal("no error without the files")
	}
	if len(files) != 3 {
		t.Errorf("%d files, want the 3 of test/tools/gitops/crds", len(files))
	}
	for _, want := range []string{"/argo-cd-v", "/application-crd.yaml", "/kustomize-controller-v", "/kustomize.toolkit.fluxcd.io_kustomizations.yaml", "/helm-controller-v", "/helm.toolkit.fluxcd.io_helmreleases.yaml", "make control-plane"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
