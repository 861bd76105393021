package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// krewBinary is the krew that test/tools/krew pins, as make control-plane
// builds it.
func krewBinary(t *testing.T) string {
	t.Helper()
	dir, err := cluster.ToolDir("krew", "sigs.k8s.io/krew", "krew")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "krew")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(cluster.MissingTool(bin))
	}
	return bin
}

// krewDist lays out what the release workflow has built before it packs:
// the built nsman as this machine's binary, a stand-in for every other
// platform the krew manifest names; runs scripts/dist.sh on it as the
// workflow does, for the release testVersion; and returns the directory and
// the platforms (os_arch).
func krewDist(t *testing.T) (string, []string) {
	t.Helper()
	template, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "krew", "nsman.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var platforms []string
	for _, m := range regexp.MustCompile(`@SHA256_([a-z0-9]+)_([a-z0-9]+)@`).FindAllStringSubmatch(string(template), -1) {
		platforms = append(platforms, m[1]+"_"+m[2])
		bin := filepath.Join(dir, "nsman-"+m[1]+"-"+m[2])
		data := []byte("#!/bin/sh\necho stand-in for " + m[1] + "/" + m[2] + "\n")
		if m[1] == runtime.GOOS && m[2] == runtime.GOARCH {
			if data, err = os.ReadFile(nsmanBinary(t)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "scripts/dist.sh", "nsman/nsman", testVersion, dir)
	cmd.Dir = nsmantest.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/dist.sh: %v\n%s", err, out)
	}
	return dir, platforms
}

// TestKrewInstallsTheRelease: krew itself, as krew-index's checks run it,
// installs each platform's archive from the manifest scripts/dist.sh
// renders (validating the manifest, checking the archive's SHA-256 against
// it, linking bin as kubectl-nsman), and refuses an archive the manifest
// does not name; installed by krew, nsman runs through kubectl as
// 'kubectl nsman'.
func TestKrewInstallsTheRelease(t *testing.T) {
	krew := krewBinary(t)
	dir, platforms := krewDist(t)
	manifest := filepath.Join(dir, "nsman.yaml")
	version := strings.TrimPrefix(testVersion, "v")
	install := func(platform, archive string) (root, out string, code int) {
		t.Helper()
		root = t.TempDir()
		goos, goarch, _ := strings.Cut(platform, "_")
		env := []string{"HOME=" + t.TempDir(), "KREW_ROOT=" + root, "KREW_OS=" + goos, "KREW_ARCH=" + goarch}
		stdout, stderr, code := runIn(t, env, krew, "install", "--manifest="+manifest, "--archive="+filepath.Join(dir, archive))
		return root, stdout + stderr, code
	}
	this := runtime.GOOS + "_" + runtime.GOARCH
	var thisRoot string
	for _, platform := range platforms {
		root, out, code := install(platform, "nsman_"+version+"_"+platform+".tar.gz")
		if code != 0 {
			t.Errorf("%s: krew install exited %d:\n%s", platform, code, out)
			continue
		}
		link := filepath.Join(root, "bin", "kubectl-nsman")
		if target, err := os.Readlink(link); err != nil || target != filepath.Join(root, "store", "nsman", testVersion, "nsman") {
			t.Errorf("%s: %s links to %q (%v), want the store's nsman of %s", platform, link, target, err, testVersion)
		}
		if _, err := os.Stat(filepath.Join(root, "store", "nsman", testVersion, "LICENSE")); err != nil {
			t.Errorf("%s: krew installed no LICENSE: %v", platform, err)
		}
		if platform == this {
			thisRoot = root
		}
	}
	if len(platforms) > 1 {
		other := platforms[0]
		if other == this {
			other = platforms[1]
		}
		if _, out, code := install(this, "nsman_"+version+"_"+other+".tar.gz"); code == 0 || !strings.Contains(out, "checksum does not match") {
			t.Errorf("krew install of %s's archive as %s's: exit %d, want a checksum mismatch:\n%s", other, this, code, out)
		}
	}
	switch {
	case !slices.Contains(platforms, this):
		t.Skipf("the krew manifest has no platform %s: nsman installed by krew not run", this)
	case thisRoot == "":
		return // its install failed, said above
	}
	kubectl := nsmantest.Kubectl(t)
	env := []string{
		"PATH=" + filepath.Join(thisRoot, "bin") + string(os.PathListSeparator) + filepath.Dir(kubectl),
		"HOME=" + t.TempDir(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=",
	}
	if stdout, stderr, code := runIn(t, env, kubectl, "nsman", "version"); code != 0 || !strings.HasPrefix(stdout, "nsman "+testVersion+" ") {
		t.Errorf("kubectl nsman version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if stdout, stderr, code := runIn(t, env, kubectl, "nsman", "sweep", "--help"); code != 0 || !strings.Contains(stdout, "Usage:\n  kubectl nsman sweep [flags]\n") {
		t.Errorf("kubectl nsman sweep --help: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
}
