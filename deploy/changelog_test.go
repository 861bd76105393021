package deploy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// changelogSection runs scripts/changelog-section.sh from the repository's
// top directory, as the release workflow does, and returns its stdout,
// stderr and exit status.
func changelogSection(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"scripts/changelog-section.sh"}, args...)...)
	cmd.Dir = ".."
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// changelogFixture has what a CHANGELOG.md holds after a few releases: the
// sections a release extracts sit between others, or last before the link
// definitions; a version is the prefix of another's.
const changelogFixture = `# Changelog

All notable changes.

## [Unreleased]

### Added

- something not released

## [1.2.10] - 2027-03-01

### Fixed

- the tenth

## [1.2.1] - 2027-02-01

### Added

- one line
  continued

### Fixed

- another ([docs/operating.md](docs/operating.md#holds), [the spec](https://semver.org/), [below](#fixed))

## [1.2.0-rc.1] - 2027-01-15

- a pre-release

## [1.1.0]

- a heading without its date

## [1.0.1] - 2026-12-15

## [1.0.0] - 2026-12-01

### Added

- the first release

[Unreleased]: https://github.com/nsman/nsman/compare/v1.2.10...HEAD
[1.2.10]: https://github.com/nsman/nsman/compare/v1.2.1...v1.2.10
`

// TestChangelogSection: the release notes get exactly a version's section,
// and a tag that has none, or only Unreleased's entries, stops the release
// with a message that says what to do.
func TestChangelogSection(t *testing.T) {
	fixture := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(fixture, []byte(changelogFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string // before the version
		version string
		want    string // stdout, when the status is 0
		code    int
		stderr  []string // each in stderr
	}{
		{name: "a section between others, its version the prefix of another's", version: "1.2.1", want: "### Added\n\n- one line\n  continued\n\n### Fixed\n\n- another ([docs/operating.md](docs/operating.md#holds), [the spec](https://semver.org/), [below](#fixed))\n"},
		{name: "relative links made absolute", args: []string{"-b", "https://github.com/nsman/nsman/blob/v1.2.1/"}, version: "1.2.1", want: "### Added\n\n- one line\n  continued\n\n### Fixed\n\n- another ([docs/operating.md](https://github.com/nsman/nsman/blob/v1.2.1/docs/operating.md#holds), [the spec](https://semver.org/), [below](#fixed))\n"},
		{name: "a base that is no URL", args: []string{"-b", "https://x/a&b"}, version: "1.2.1", code: 2, stderr: []string{"-b https://x/a&b: want a URL"}},
		{name: "the version a prefix names", version: "1.2.10", want: "### Fixed\n\n- the tenth\n"},
		{name: "a pre-release", version: "1.2.0-rc.1", want: "- a pre-release\n"},
		{name: "the last, before the link definitions", version: "1.0.0", want: "### Added\n\n- the first release\n"},
		{name: "Unreleased is no release", version: "Unreleased", code: 1, stderr: []string{"Unreleased is not a release", "## [X.Y.Z] - YYYY-MM-DD", "docs/release.md"}},
		{name: "unreleased in any case", version: "unreleased", code: 1, stderr: []string{"Unreleased is not a release"}},
		{name: "a version without a section", version: "1.3.0", code: 1, stderr: []string{"has no section for 1.3.0", "'## [1.3.0] - YYYY-MM-DD' before tagging v1.3.0", "docs/release.md"}},
		{name: "a prefix is no version", version: "1.2", code: 1, stderr: []string{"has no section for 1.2:"}},
		{name: "a heading without its date", version: "1.1.0", code: 1, stderr: []string{"must be '## [1.1.0] - YYYY-MM-DD'"}},
		{name: "an empty section", version: "1.0.1", code: 1, stderr: []string{"the section for 1.0.1 says nothing"}},
		{name: "the tag's v", version: "v1.2.1", code: 2, stderr: []string{"without its v (1.2.1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := changelogSection(t, append(tc.args, tc.version, fixture)...)
			if code != tc.code {
				t.Fatalf("exit status %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			if code == 0 && stdout != tc.want {
				t.Errorf("section of %s:\n%q\nwant\n%q", tc.version, stdout, tc.want)
			}
			if code != 0 && stdout != "" {
				t.Errorf("failed with stdout %q, want none", stdout)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q, want it to say %q", stderr, s)
				}
			}
		})
	}
}

// TestChangelog: CHANGELOG.md is a Keep a Changelog file whose every
// release has a section the release workflow can extract, Unreleased first.
func TestChangelog(t *testing.T) {
	changelog := read(t, "CHANGELOG.md")
	for _, link := range []string{"https://keepachangelog.com/en/1.1.0/", "https://semver.org/spec/v2.0.0.html"} {
		if !strings.Contains(changelog, link) {
			t.Errorf("CHANGELOG.md does not link %s", link)
		}
	}
	headings := regexp.MustCompile(`(?m)^## .*$`).FindAllString(changelog, -1)
	if len(headings) == 0 || headings[0] != "## [Unreleased]" {
		t.Fatalf("CHANGELOG.md's sections %q: want ## [Unreleased] first", headings)
	}
	if _, stderr, code := changelogSection(t, "Unreleased"); code != 1 {
		t.Errorf("Unreleased extracted as a release (exit status %d, stderr %q)", code, stderr)
	}
	release := regexp.MustCompile(`^## \[([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	for _, h := range headings[1:] {
		m := release.FindStringSubmatch(h)
		if m == nil {
			t.Errorf("CHANGELOG.md: heading %q, want ## [X.Y.Z] - YYYY-MM-DD", h)
			continue
		}
		if stdout, stderr, code := changelogSection(t, m[1]); code != 0 || stdout == "" {
			t.Errorf("the section of %s: exit status %d, stderr %q", m[1], code, stderr)
		}
	}
}

// TestReleaseNotesFromTheChangelog: the release workflow refuses a tag
// without a section in its first job, before the image and the chart are
// pushed, and puts the section into the release's notes.
func TestReleaseNotesFromTheChangelog(t *testing.T) {
	var workflow struct {
		Jobs map[string]struct {
			Needs any `json:"needs"`
			Steps []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
				Run  string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(read(t, ".github/workflows/release.yml")), &workflow); err != nil {
		t.Fatal(err)
	}
	run := func(job, step string) string {
		for _, s := range workflow.Jobs[job].Steps {
			if s.ID == step || s.Name == step {
				return s.Run
			}
		}
		t.Fatalf("release.yml: job %s has no step %s", job, step)
		return ""
	}
	if !strings.Contains(run("version", "version"), `scripts/changelog-section.sh "$version"`) {
		t.Errorf("release.yml: the version job does not check that CHANGELOG.md has the version's section")
	}
	for _, job := range []string{"image", "chart"} {
		if needs := workflow.Jobs[job].Needs; needs != "version" {
			t.Errorf("release.yml: job %s needs %v, want version alone, which checks the changelog first", job, needs)
		}
	}
	notes := run("release", "Create the release")
	section := strings.Index(notes, `scripts/changelog-section.sh -b "https://github.com/$GH_REPO/blob/$TAG" "$VERSION"`)
	digests := strings.Index(notes, "$IMAGE_DIGEST")
	written := strings.Index(notes, `} > "$RUNNER_TEMP/notes.md"`)
	if section < 0 || digests < section || written < digests || !strings.Contains(notes, `--notes-file "$RUNNER_TEMP/notes.md"`) {
		t.Errorf("release.yml: the release's notes are not the version's section of CHANGELOG.md above the digests:\n%s", notes)
	}
}
