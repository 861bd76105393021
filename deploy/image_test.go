package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repository is where releases push the image.
const repository = "ghcr.io/nsman/nsman"

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// One image reference scheme: a release vX.Y.Z is the image
// ghcr.io/nsman/nsman:X.Y.Z, the chart's appVersion; deploy/base runs the
// same; make image, the chart and the release workflow name the same
// repository; no file names a tag no release publishes (latest, vX.Y.Z).
func TestOneImageReference(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
		Version    string `json:"version"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "deploy/helm/nsman/Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(chart.AppVersion) {
		t.Fatalf("Chart.yaml appVersion %q: want X.Y.Z[-PRERELEASE], the image's tag", chart.AppVersion)
	}
	// The release workflow reads it as written: quoted, on a line of its own.
	if !strings.Contains(read(t, "deploy/helm/nsman/Chart.yaml"), "\nappVersion: \""+chart.AppVersion+"\"\n") {
		t.Errorf("Chart.yaml: want the line appVersion: \"%s\", quoted, which the release workflow reads", chart.AppVersion)
	}
	want := repository + ":" + chart.AppVersion
	if got := regexp.MustCompile(`(?m)^\s+image: (\S+)$`).FindAllStringSubmatch(read(t, "deploy/base/cronjob.yaml"), -1); len(got) != 1 || got[0][1] != want {
		t.Errorf("deploy/base/cronjob.yaml names the images %q, want %s alone (the chart's appVersion)", got, want)
	}
	for path, pattern := range map[string]string{
		"deploy/helm/nsman/values.yaml": `(?m)^  repository: (\S+)$`,
		"Makefile":                      `(?m)^IMAGE \?= ([^:]+):\$\(patsubst v%,%,\$\(VERSION\)\)$`,
		".github/workflows/release.yml": `(?m)^  IMAGE: (\S+)$`,
	} {
		m := regexp.MustCompile(pattern).FindStringSubmatch(read(t, path))
		if m == nil || m[1] != repository {
			t.Errorf("%s: %q, want the repository %s (and in the Makefile the version without its v)", path, m, repository)
		}
	}
	if release := read(t, ".github/workflows/release.yml"); !strings.Contains(release, "${{ env.IMAGE }}:${{ needs.version.outputs.version }}") ||
		strings.Contains(release, "${{ env.IMAGE }}:${{ needs.version.outputs.tag }}") {
		t.Errorf("release.yml: want the image tagged by the version without its v, and by nothing else")
	}
	// Anywhere else: a tag of the form a release publishes, or a digest.
	tagged := regexp.MustCompile(regexp.QuoteMeta(repository) + `:([^\s` + "`" + `'")\]]+)`)
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(files, "../README.md", "../CONTRIBUTING.md", "../Dockerfile", "../Makefile", "../deploy/base/cronjob.yaml", "../.github/workflows/release.yml") {
		path = strings.TrimPrefix(path, "../")
		for _, m := range tagged.FindAllStringSubmatch(read(t, path), -1) {
			if m[1] == "latest" || strings.HasPrefix(m[1], "v") {
				t.Errorf("%s names %s: no release publishes that tag (want %s:X.Y.Z)", path, m[0], repository)
			}
		}
	}
}

// The project is licensed Apache-2.0, and says so where a user looks: the
// LICENSE file, the image's label, the chart and the README; the image and
// the release's binaries carry the LICENSE (Apache-2.0 4(a)).
func TestLicense(t *testing.T) {
	license := read(t, "LICENSE")
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(license, want) {
			t.Errorf("LICENSE lacks %q: want the Apache License 2.0's text", want)
		}
	}
	for _, tt := range []struct{ path, want string }{
		{"Dockerfile", `org.opencontainers.image.licenses="Apache-2.0"`},
		{"Dockerfile", "COPY LICENSE /LICENSE"},
		{".github/workflows/release.yml", "index:org.opencontainers.image.licenses=Apache-2.0"},
		{".github/workflows/release.yml", "cp LICENSE dist/LICENSE"},
		{"deploy/helm/nsman/Chart.yaml", "artifacthub.io/license: Apache-2.0"},
		{"README.md", "Apache License, Version 2.0: [LICENSE](LICENSE)"},
	} {
		if !strings.Contains(read(t, tt.path), tt.want) {
			t.Errorf("%s lacks %s", tt.path, tt.want)
		}
	}
}

// TestOneMinimumKubernetes: the chart refuses the Kubernetes releases
// nsman doctor calls too old, and no other.
func TestOneMinimumKubernetes(t *testing.T) {
	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "deploy/helm/nsman/Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	if want := ">=" + MinKubernetes + ".0-0"; chart.KubeVersion != want {
		t.Errorf("the chart's kubeVersion is %q, want %q (MinKubernetes)", chart.KubeVersion, want)
	}
}

// TestTestedKubernetesVersions: docs/release.md names the Kubernetes
// releases the tests run on as test/tools pins them, the oldest being
// MinKubernetes.
func TestTestedKubernetesVersions(t *testing.T) {
	pinned := regexp.MustCompile(`(?m)^(?:require[ \t]+|[ \t]+)k8s\.io/kubernetes (v([0-9]+\.[0-9]+)\.[0-9]+) `)
	release := read(t, "docs/release.md")
	for _, tc := range []struct{ module, row string }{
		{module: "test/tools/kube", row: "| %s (%s) | `test/tools/kube` |"},
		{module: "test/tools/kube-min", row: "| %s (%s), the oldest supported | `test/tools/kube-min` |"},
	} {
		m := pinned.FindStringSubmatch(read(t, tc.module+"/go.mod"))
		if m == nil {
			t.Fatalf("%s/go.mod pins no k8s.io/kubernetes", tc.module)
		}
		if row := fmt.Sprintf(tc.row, m[2], m[1]); !strings.Contains(release, row) {
			t.Errorf("docs/release.md has no row %q for the Kubernetes %s pins", row, tc.module)
		}
		if tc.module == "test/tools/kube-min" && m[2] != MinKubernetes {
			t.Errorf("%s pins Kubernetes %s, MinKubernetes is %s", tc.module, m[2], MinKubernetes)
		}
	}
}
