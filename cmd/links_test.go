package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's top directory, relative to this package.
const repoRoot = ".."

// linkedDocs lists the Markdown files whose relative links must resolve: the
// README, CONTRIBUTING.md, CHANGELOG.md and everything under docs/.
func linkedDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocLinksResolve fails on any relative link in README.md,
// CONTRIBUTING.md, CHANGELOG.md or docs/ whose file does not exist, or whose #anchor names
// no heading of the Markdown file it points to (by GitHub's slug rules).
func TestDocLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{} // by path from repoRoot
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(data))
		anchors[path] = a
		return a, nil
	}
	for _, file := range linkedDocs(t) {
		data, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		for _, l := range markdownLinks(string(data)) {
			if !isRelativeLink(l.target) {
				continue
			}
			target, fragment, _ := strings.Cut(l.target, "#")
			path := file // a bare #anchor points into the file itself
			if target != "" {
				path = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", file, l.line, l.target, filepath.ToSlash(path))
					continue
				}
			}
			if fragment == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			a, err := anchorsOf(path)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.line, l.target, err)
				continue
			}
			if !a[fragment] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", file, l.line, l.target, filepath.ToSlash(path), fragment)
			}
		}
	}
}

// markdownLink is one link found in a Markdown document.
type markdownLink struct {
	line   int
	target string
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title" after the target.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// referenceDefinition matches a reference-style link definition.
	referenceDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// codeSpan matches inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// htmlAnchor matches an explicit anchor: <a id="x"> or <a name="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// markdownLinks returns the links of a Markdown document outside code
// blocks and code spans.
func markdownLinks(doc string) []markdownLink {
	var links []markdownLink
	for i, line := range proseLines(doc) {
		if line == "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, markdownLink{line: i + 1, target: m[1]})
		}
		if m := referenceDefinition.FindStringSubmatch(line); m != nil {
			links = append(links, markdownLink{line: i + 1, target: m[1]})
		}
	}
	return links
}

// proseLines returns the document's lines with those inside fenced code
// blocks blanked, so that line numbers stay those of the file.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if f := fenceOpening(trimmed); f != "" {
			fence = f
			lines[i] = ""
		}
	}
	return lines
}

// fenceOpening returns the fence (``` or ~~~, possibly longer) that line
// opens, or "".
func fenceOpening(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}

// isRelativeLink reports whether a link target points into the repository:
// not a URL with a scheme, not protocol-relative, not absolute.
func isRelativeLink(target string) bool {
	if target == "" || strings.HasPrefix(target, "/") {
		return false
	}
	if i := strings.IndexAny(target, ":/#?"); i >= 0 && target[i] == ':' {
		return false // http:, https:, mailto:, ...
	}
	return true
}

// headingAnchors returns the anchors GitHub gives a document's headings (and
// its explicit <a id> anchors).
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(doc) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		text, ok := atxHeading(line)
		if !ok {
			continue
		}
		slug := githubSlug(text)
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// atxHeading returns the text of a "# heading" line.
func atxHeading(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return "", false
	}
	level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
	if level < 1 || level > 6 {
		return "", false
	}
	rest := trimmed[level:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	// A closing sequence of #s is not part of the heading.
	if t := strings.TrimRight(rest, "#"); t != rest && (t == "" || strings.HasSuffix(t, " ")) {
		rest = strings.TrimSpace(t)
	}
	return rest, true
}

var (
	// markdownLinkText reduces [text](target) to its text.
	markdownLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// htmlTag matches an inline HTML tag.
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// githubSlug turns a heading's text into its anchor as GitHub does: the
// rendered text in lower case, every character dropped that is not a
// letter, a digit, a mark, '-', '_' or a space, and spaces turned into '-'.
func githubSlug(heading string) string {
	heading = markdownLinkText.ReplaceAllString(heading, "$1")
	heading = htmlTag.ReplaceAllString(heading, "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestGithubSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Installing into a cluster", "installing-into-a-cluster"},
		{"Dry-run and `--at` from a laptop", "dry-run-and---at-from-a-laptop"},
		{"The JSON report", "the-json-report"},
		{"A rule: a backstop for namespaces nobody cleaned up", "a-rule-a-backstop-for-namespaces-nobody-cleaned-up"},
		{"`nsman sweep`", "nsman-sweep"},
		{"Migrating from the Java operator", "migrating-from-the-java-operator"},
		{"Links: [docs](docs/README.md) and `make_docs`", "links-docs-and-make_docs"},
		{"Exit codes, 0–2", "exit-codes-02"},
	} {
		if got := githubSlug(tc.heading); got != tc.want {
			t.Errorf("githubSlug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestMarkdownLinks(t *testing.T) {
	doc := strings.Join([]string{
		"See [the docs](docs/README.md) and [flags](docs/flags.md#nsman-sweep \"title\").",
		"`[not a link](nowhere.md)` and [web](https://example.com).",
		"```",
		"[in a code block](nowhere.md)",
		"```",
		"[ref]: CONTRIBUTING.md",
	}, "\n")
	var got []string
	for _, l := range markdownLinks(doc) {
		got = append(got, l.target)
	}
	want := []string{"docs/README.md", "docs/flags.md#nsman-sweep", "https://example.com", "CONTRIBUTING.md"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links = %q, want %q", got, want)
	}
	if isRelativeLink("https://example.com") || isRelativeLink("mailto:a@b") || !isRelativeLink("docs/a.md#x") || !isRelativeLink("#x") {
		t.Error("isRelativeLink misjudges a target")
	}
}

// The README is a user's front door, short enough to read to the end: what
// nsman is, then trying it and installing it (in dry-run mode first) in its
// first screens, then the CLI and a first dry run, and the two commands of
// a contributor, make demo and make test (which .ci/run runs).
func TestReadmeIsAFrontDoor(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250: the details belong in docs/", n)
	}
	for _, want := range []string{
		"go install github.com/nsman/nsman/cmd/nsman@",
		"nsman sweep --dry-run",
		"--set dryRun=true",
		"--set dryRun=false",
		"Kubernetes 1.30 or later",
		"\nmake demo\nmake test\n",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	// A newcomer meets them in this order, each within the lines given.
	at := 0
	for _, step := range []struct {
		text   string
		within int
	}{
		{"## Try it\n", 15},
		{"\nmake demo\n", 20},
		{"## Install\n", 45},
		{"helm install nsman oci://ghcr.io/nsman/charts/nsman", 60},
		{"## The CLI\n", 120},
		{"## A first dry run\n", 140},
	} {
		i := strings.Index(readme[at:], step.text)
		if i < 0 {
			t.Errorf("README.md does not say %q after what comes before it", step.text)
			break
		}
		at += i
		if line := strings.Count(readme[:at], "\n") + 1; line > step.within {
			t.Errorf("README.md says %q at line %d, want it within the first %d", step.text, line, step.within)
		}
	}
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(ci)), "\n"); lines[len(lines)-1] != "make test" {
		t.Errorf(".ci/run ends %q, want the README's test command, make test", lines[len(lines)-1])
	}
}
