package nsmantest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/nsman/nsman/test/cluster"
)

// The kinds of other projects that test/fixtures/crds stands in for,
// which nsman writes to.
var (
	// ScaledObjectResource is KEDA's ScaledObject: nsman pauses it.
	ScaledObjectResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	// RolloutResource is Argo Rollouts' Rollout, a custom resource with a
	// scale subresource: nsman scales it as a Deployment.
	RolloutResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
)

// HelmReleaseResource is Flux's HelmRelease, as its release's CRD
// (InstallGitOpsCRDs) serves it: a sleep's patches suspend it.
var HelmReleaseResource = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallFixtureCRDs creates each CRD of test/fixtures/crds with client (an
// admin's) and waits until the API server serves it (Established). A CRD
// of that name that exists already is left as it is, whether installed by
// an earlier call or the real one: any number of tests may call it.
func InstallFixtureCRDs(t testing.TB, client dynamic.Interface) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "test", "fixtures", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no CRD in test/fixtures/crds")
	}
	installCRDs(t, client, files)
}

// InstallGitOpsCRDs creates the GitOps projects' own CRDs whose objects own
// namespaces (Argo CD's Application, Flux's Kustomization and HelmRelease),
// as test/tools/build.sh (make control-plane) fetched them at the versions
// test/tools/gitops pins, with client (an admin's), and waits until the API
// server serves each (Established). As InstallFixtureCRDs, it leaves a CRD
// that exists already as it is: any number of tests may call it. The test
// fails when the files are not in the cache.
func InstallGitOpsCRDs(t testing.TB, client dynamic.Interface) {
	t.Helper()
	files, err := GitOpsCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, client, files)
}

// GitOpsCRDFiles are the paths in the user cache of the CRDs that
// test/tools/gitops/crds names, each at the version test/tools/gitops pins;
// an error names make control-plane when one is missing.
func GitOpsCRDFiles() ([]string, error) {
	list := filepath.Join(RepoRoot(), "test", "tools", "gitops", "crds")
	data, err := os.ReadFile(list)
	if err != nil {
		return nil, err
	}
	var files []string
	var missing []error
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: %q: want module, prefix and file", list, strings.TrimSpace(line))
		}
		dir, err := cluster.ToolDir("gitops", fields[0], fields[1])
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, path.Base(fields[2]))
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, cluster.MissingTool(f))
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s names no CRD", list)
	}
	return files, errors.Join(missing...)
}

// installCRDs creates each CRD of files with client and waits until each
// is Established; one that exists already is left as it is.
func installCRDs(t testing.TB, client dynamic.Interface, files []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, obj := range objs {
			if _, err := client.Resource(crdResource).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create CRD %s (%s): %v", obj.GetName(), f, err)
			}
			names = append(names, obj.GetName())
		}
	}
	for _, name := range names {
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var crd *unstructured.Unstructured
			crd, last = client.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if last != nil {
				return false, nil
			}
			last = fmt.Errorf("not Established")
			return established(crd), nil
		}); err != nil {
			t.Fatalf("CRD %s: %v (%v)", name, last, err)
		}
	}
}

// established reports whether crd's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
			return true
		}
	}
	return false
}
