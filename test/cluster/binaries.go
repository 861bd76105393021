package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/mod/modfile"
)

// buildTarget is the make target that builds every binary this package runs.
const buildTarget = "make control-plane"

// binaries holds the paths of the control-plane executables and kwok's Stage
// manifests.
type binaries struct {
	etcd, apiserver, controllerManager, scheduler, kwok, kwokStages string
}

// toolsDir is test/tools, found from this source file so that it works from
// any test package's working directory.
func toolsDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the cluster package source")
	}
	return filepath.Join(filepath.Dir(file), "..", "tools"), nil
}

// pinnedVersion reads the version of module that the tools module in dir
// requires.
func pinnedVersion(dir, module string) (string, error) {
	path := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", path, module)
}

// ToolDir is the cache directory that test/tools/build.sh builds a pinned
// tool into: <user cache>/nsman/<prefix>-<version>, where the version is the
// one test/tools/<toolsModule>/go.mod requires of module.
func ToolDir(toolsModule, module, prefix string) (string, error) {
	tools, err := toolsDir()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	v, err := pinnedVersion(filepath.Join(tools, toolsModule), module)
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "nsman", prefix+"-"+v), nil
}

// MissingTool is the error for a tool binary that is not built.
func MissingTool(path string) error {
	return fmt.Errorf("%s not found: run '%s' to build it", path, buildTarget)
}

// findBinaries resolves the cache paths that test/tools/build.sh writes to and
// checks that each file is there.
func findBinaries(tier Tier, minKubernetes bool) (binaries, error) {
	dirOf := ToolDir
	kube, err := dirOf("kube", "k8s.io/kubernetes", "kubernetes")
	if err != nil {
		return binaries{}, err
	}
	apiserverDir := kube
	if minKubernetes {
		if apiserverDir, err = dirOf("kube-min", "k8s.io/kubernetes", "kubernetes"); err != nil {
			return binaries{}, err
		}
	}
	etcd, err := dirOf("etcd", "go.etcd.io/etcd/server/v3", "etcd")
	if err != nil {
		return binaries{}, err
	}
	kwok, err := dirOf("kwok", "sigs.k8s.io/kwok", "kwok")
	if err != nil {
		return binaries{}, err
	}
	b := binaries{
		etcd:              filepath.Join(etcd, "etcd"),
		apiserver:         filepath.Join(apiserverDir, "kube-apiserver"),
		controllerManager: filepath.Join(kube, "kube-controller-manager"),
		scheduler:         filepath.Join(kube, "kube-scheduler"),
		kwok:              filepath.Join(kwok, "kwok"),
		kwokStages:        filepath.Join(kwok, "stages.yaml"),
	}
	need := []string{b.etcd, b.apiserver}
	if tier == FullTier {
		need = append(need, b.controllerManager, b.scheduler, b.kwok, b.kwokStages)
	}
	var missing []error
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, MissingTool(p))
		}
	}
	return b, errors.Join(missing...)
}
