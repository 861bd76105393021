package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// krewPlugin is what krew reads of a plugin manifest
// (sigs.k8s.io/krew/pkg/index's Plugin), decoded strictly so that a
// misspelt field fails here rather than being ignored by krew.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats,omitempty"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Bin      string                `json:"bin"`
	Files    []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
}

// krewPlatforms are the os/arch pairs krew runs on, which a selector must
// match one of, and no two selectors the same.
var krewPlatforms = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "arm"}, {"linux", "386"},
	{"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "386"},
}

var (
	krewSafeName = regexp.MustCompile(`^[\w-]+$`)
	krewSHA256   = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// validateKrewPlugin checks p, read from the file name.yaml, by the rules
// of krew's validation (sigs.k8s.io/krew/pkg/index/validation's
// ValidatePlugin) and of krew-index's validate-krew-manifest: the API
// version and kind, a safe name that is the file's, a short description
// (kept to 50 characters, as krew search shows it), a SemVer version with
// its v, and for each platform an https uri, a SHA-256, a bin, files, a
// selector of os and arch alone that matches a platform krew runs on and
// shares it with no other.
func validateKrewPlugin(name string, p krewPlugin) []error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(p.APIVersion == "krew.googlecontainertools.github.com/v1alpha2", "apiVersion %q", p.APIVersion)
	check(p.Kind == "Plugin", "kind %q", p.Kind)
	check(krewSafeName.MatchString(name) && p.Metadata.Name == name, "metadata.name %q, want the file's name %q", p.Metadata.Name, name)
	check(p.Spec.ShortDescription != "" && len(p.Spec.ShortDescription) <= 50, "shortDescription %q: want 1 to 50 characters", p.Spec.ShortDescription)
	check(p.Spec.Description != "", "no description")
	check(strings.HasPrefix(p.Spec.Homepage, "https://"), "homepage %q: want https", p.Spec.Homepage)
	_, err := version.ParseSemantic(strings.TrimPrefix(p.Spec.Version, "v"))
	check(strings.HasPrefix(p.Spec.Version, "v") && err == nil, "version %q: want vMAJOR.MINOR.PATCH[-PRERELEASE] (%v)", p.Spec.Version, err)
	check(len(p.Spec.Platforms) > 0, "no platforms")
	matched := map[[2]string]int{}
	for i, pl := range p.Spec.Platforms {
		check(strings.HasPrefix(pl.URI, "https://"), "platforms[%d].uri %q: want https", i, pl.URI)
		check(krewSHA256.MatchString(pl.Sha256), "platforms[%d].sha256 %q: want 64 lower-case hex digits", i, pl.Sha256)
		check(pl.Bin != "", "platforms[%d] has no bin", i)
		check(len(pl.Files) > 0, "platforms[%d] has no files", i)
		for j, f := range pl.Files {
			check(f.From != "" && f.To != "", "platforms[%d].files[%d] %+v: want from and to", i, j, f)
		}
		sel, err := krewSelector(pl.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("platforms[%d].selector: %w", i, err))
			continue
		}
		selects := false
		for _, osArch := range krewPlatforms {
			if sel.Matches(labels.Set{"os": osArch[0], "arch": osArch[1]}) {
				selects = true
				matched[osArch]++
				check(matched[osArch] == 1, "platforms[%d].selector selects %s/%s, as another does", i, osArch[0], osArch[1])
			}
		}
		check(selects, "platforms[%d].selector matches no platform krew runs on", i)
	}
	return errs
}

// krewSelector is sel as krew accepts it: set, not empty, on the keys os
// and arch alone.
func krewSelector(sel *metav1.LabelSelector) (labels.Selector, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, errors.New("none or empty")
	}
	for k := range sel.MatchLabels {
		if k != "os" && k != "arch" {
			return nil, fmt.Errorf("key %q: krew selects on os and arch alone", k)
		}
	}
	for _, e := range sel.MatchExpressions {
		if e.Key != "os" && e.Key != "arch" {
			return nil, fmt.Errorf("key %q: krew selects on os and arch alone", e.Key)
		}
	}
	return metav1.LabelSelectorAsSelector(sel)
}

// releasePlatforms are the OS/ARCH pairs the release workflow builds
// binaries for.
func releasePlatforms(t *testing.T) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s+for platform in ([a-z0-9/ ]+); do$`).FindStringSubmatch(read(t, ".github/workflows/release.yml"))
	if m == nil {
		t.Fatal("release.yml: no line 'for platform in OS/ARCH ...; do' building the binaries")
	}
	return strings.Fields(m[1])
}

// dist writes a stand-in binary nsman-OS-ARCH for each platform into a
// directory, with the checksums.txt the release workflow writes, runs
// scripts/dist.sh on it as the workflow does, and returns the directory,
// the script's stderr and its exit status.
func dist(t *testing.T, platforms []string, args ...string) (dir, stderr string, code int) {
	t.Helper()
	dir = t.TempDir()
	var sums strings.Builder
	for _, p := range platforms {
		name := "nsman-" + strings.ReplaceAll(p, "/", "-")
		data := []byte("#!/bin/sh\necho " + name + "\n")
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sums, "%s  %s\n", sha256Hex(data), name)
	}
	if err := os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append(append([]string{"scripts/dist.sh"}, args...), dir)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1767225600")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return dir, errOut.String(), code
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestKrewManifest renders the krew manifest for a release of a fork from
// the archives scripts/dist.sh packs of stand-in binaries, one for each
// platform the release workflow builds, and checks it by krew's rules; that
// each platform's uri is its archive's on the fork's release and its
// sha256 the archive's, as checksums.txt says too; and that krew,
// installing an archive as the manifest says, finds the binary executable
// under bin and the LICENSE beside it.
func TestKrewManifest(t *testing.T) {
	const repo, tag = "octo/nsman-fork", "v1.2.3-rc.1"
	platforms := releasePlatforms(t)
	dir, stderr, code := dist(t, platforms, repo, tag)
	if code != 0 {
		t.Fatalf("scripts/dist.sh exited %d: %s", code, stderr)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict([]byte(readFile(t, filepath.Join(dir, "nsman.yaml"))), &p); err != nil {
		t.Fatalf("nsman.yaml: %v", err)
	}
	for _, err := range validateKrewPlugin("nsman", p) {
		t.Errorf("nsman.yaml: %v", err)
	}
	if p.Spec.Version != tag || p.Spec.Homepage != "https://github.com/"+repo {
		t.Errorf("version %q, homepage %q: want %s and the fork's", p.Spec.Version, p.Spec.Homepage, tag)
	}
	if len(p.Spec.Platforms) != len(platforms) {
		t.Errorf("%d platforms, want the %d the release builds: %v", len(p.Spec.Platforms), len(platforms), platforms)
	}
	checksums := readFile(t, filepath.Join(dir, "checksums.txt"))
	for _, pl := range p.Spec.Platforms {
		if pl.Selector == nil {
			continue // validateKrewPlugin said so
		}
		goos, goarch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		archive := fmt.Sprintf("nsman_%s_%s_%s.tar.gz", strings.TrimPrefix(tag, "v"), goos, goarch)
		if want := "https://github.com/" + repo + "/releases/download/" + tag + "/" + archive; pl.URI != want {
			t.Errorf("%s/%s: uri %s, want %s", goos, goarch, pl.URI, want)
		}
		data, err := os.ReadFile(filepath.Join(dir, archive))
		if err != nil {
			t.Errorf("%s/%s: %v", goos, goarch, err)
			continue
		}
		if sum := sha256Hex(data); pl.Sha256 != sum || !strings.Contains(checksums, sum+"  "+archive+"\n") {
			t.Errorf("%s: sha256 %s, the manifest says %s; checksums.txt:\n%s", archive, sum, pl.Sha256, checksums)
		}
		binary := readFile(t, filepath.Join(dir, "nsman-"+goos+"-"+goarch))
		checkArchive(t, archive, data, pl, binary)
	}
	again, _, _ := dist(t, platforms, repo, tag)
	if readFile(t, filepath.Join(again, "nsman.yaml")) != readFile(t, filepath.Join(dir, "nsman.yaml")) {
		t.Error("two runs of scripts/dist.sh on the same binaries rendered different manifests: the archives are not reproducible")
	}
}

// archiveEntry is a file of a release archive.
type archiveEntry struct {
	mode int64
	data string
}

// checkArchive checks that the archive holds the binary as nsman (a
// regular file, mode 0755), LICENSE and README.md as the repository has
// them, and nothing else; and installs it as krew does, moving what each
// of the platform's files matches into the directory it names, after which
// bin is the binary and LICENSE beside it.
func checkArchive(t *testing.T, name string, data []byte, pl krewPlatform, binary string) {
	t.Helper()
	entries := readArchive(t, name, data)
	want := map[string]archiveEntry{
		"nsman":     {0o755, binary},
		"LICENSE":   {0o644, read(t, "LICENSE")},
		"README.md": {0o644, read(t, "README.md")},
	}
	if len(entries) != len(want) {
		t.Errorf("%s holds %d files, want nsman, LICENSE and README.md", name, len(entries))
	}
	for path, w := range want {
		if got, ok := entries[path]; !ok || got != w {
			t.Errorf("%s: %s is %v (mode %o), want mode %o and the file's content", name, path, ok, got.mode, w.mode)
		}
	}
	installed := map[string]archiveEntry{}
	for _, f := range pl.Files {
		n := 0
		for p, e := range entries {
			if ok, _ := path.Match(f.From, p); ok {
				installed[path.Join(f.To, path.Base(p))] = e
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: files' from %q matches nothing in the archive", name, f.From)
		}
	}
	if bin, ok := installed[path.Clean(pl.Bin)]; !ok || bin.mode&0o111 == 0 || bin.data != binary {
		t.Errorf("%s installed as the manifest says: bin %q is not the binary, executable", name, pl.Bin)
	}
	if _, ok := installed["LICENSE"]; !ok {
		t.Errorf("%s installed as the manifest says: no LICENSE", name)
	}
}

// readArchive returns the regular files of a .tar.gz by name, and fails on
// anything but a regular file.
func readArchive(t *testing.T, name string, data []byte) map[string]archiveEntry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	entries := map[string]archiveEntry{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("%s: %s is of type %q, want a regular file", name, h.Name, h.Typeflag)
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		entries[h.Name] = archiveEntry{h.Mode, string(content)}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDistRefuses: scripts/dist.sh writes no manifest that lacks a
// platform built, or names one not built, and says how it is called.
func TestDistRefuses(t *testing.T) {
	for _, tt := range []struct {
		name      string
		platforms []string
		args      []string
		code      int
		stderr    string
	}{
		{"a binary the manifest has no platform for", []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}, []string{"nsman/nsman", "v1.2.3"}, 1, "has no platform windows/amd64"},
		{"a platform no binary was built for", []string{"linux/amd64"}, []string{"nsman/nsman", "v1.2.3"}, 1, "names what no binary was built for: @SHA256_linux_arm64@"},
		{"no binary", nil, []string{"nsman/nsman", "v1.2.3"}, 1, "no binary"},
		{"a tag without its v", []string{"linux/amd64"}, []string{"nsman/nsman", "1.2.3"}, 2, "usage"},
		{"no repository", []string{"linux/amd64"}, []string{"nsman", "v1.2.3"}, 2, "usage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, stderr, code := dist(t, tt.platforms, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "nsman.yaml")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("nsman.yaml written (%v)", err)
			}
		})
	}
}

// TestReleasePublishesArchives: the release workflow packs the archives
// and renders the krew manifest after building the binaries, for the
// repository it releases, attests the archives as it does the binaries,
// and then creates the release with all of dist/.
func TestReleasePublishesArchives(t *testing.T) {
	release := read(t, ".github/workflows/release.yml")
	steps := []string{
		"-o \"dist/nsman-$os-$arch\" ./cmd/nsman",
		"GH_REPO: ${{ github.repository }}\n          TAG: ${{ needs.version.outputs.tag }}\n        run: scripts/dist.sh \"$GH_REPO\" \"$TAG\" dist\n",
		"subject-path: dist/nsman-*\n",
		"subject-path: dist/nsman_*.tar.gz\n",
		"gh release create \"$TAG\" dist/* ",
	}
	at := 0
	for _, step := range steps {
		i := strings.Index(release[at:], step)
		if i < 0 {
			t.Fatalf("release.yml: no %q after %q", step, release[:at][max(0, at-60):])
		}
		at += i + len(step)
	}
}
