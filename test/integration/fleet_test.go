package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsman/nsman/test/nsmantest"
)

// TestMetricsPushedWithClusterName has nsman sweep --cluster-name push to
// a real Pushgateway: every series of nsman's carries the cluster's name.
func TestMetricsPushedWithClusterName(t *testing.T) {
	e := setup(t)
	gw := nsmantest.StartPushgateway(t)
	res := e.Sweep(t, "-l", caseLabel+"="+shared.Namespace(t), "--pushgateway-url", gw, "--cluster-name", "eu-west-1")
	wantCode(t, res, 0)
	wantPushed(t, res)
	var n int
	for name, mf := range scrapePushgateway(t, gw) {
		if !strings.HasPrefix(name, "nsman_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			n++
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["cluster"] != "eu-west-1" || got["job"] != "nsman" {
				t.Errorf("%s%v: want cluster eu-west-1 and job nsman", name, got)
			}
		}
	}
	if n == 0 {
		t.Fatal("the Pushgateway exposes no series of nsman's")
	}
	scrapePushgateway(t, gw).want(t, "nsman_dry_run", labels("cluster", "eu-west-1"), 0)
}

// fleetBlock finds the YAML blocks of docs/gitops.md's section Fleets.
var fleetBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestFleetExamplesRender renders the chart with the values of
// docs/gitops.md's fleet examples, as the ApplicationSet's cluster
// generator and Flux's postBuild substitution fill them in: each install
// pushes its metrics named by its cluster.
func TestFleetExamplesRender(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, fleets, ok := strings.Cut(string(data), "\n## Fleets\n")
	if !ok {
		t.Fatal("docs/gitops.md has no section Fleets")
	}
	type example struct {
		Kind string `json:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					Source struct {
						RepoURL string `json:"repoURL"`
						Chart   string `json:"chart"`
						Helm    struct {
							ValuesObject map[string]any `json:"valuesObject"`
						} `json:"helm"`
					} `json:"source"`
				} `json:"spec"`
			} `json:"template"`
			PostBuild struct {
				Substitute map[string]string `json:"substitute"`
			} `json:"postBuild"`
			Chart struct {
				Spec struct {
					Chart string `json:"chart"`
				} `json:"spec"`
			} `json:"chart"`
			Values map[string]any `json:"values"`
		} `json:"spec"`
	}
	var blocks []string
	for _, m := range fleetBlock.FindAllStringSubmatch(fleets, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) != 3 {
		t.Fatalf("docs/gitops.md#fleets has %d YAML blocks, want the ApplicationSet, the Kustomization and the HelmRelease", len(blocks))
	}
	decode := func(block string) example {
		t.Helper()
		var ex example
		if err := utilyaml.Unmarshal([]byte(block), &ex); err != nil {
			t.Fatalf("%v:\n%s", err, block)
		}
		return ex
	}
	// The cluster generator's {{name}}, here the cluster Argo CD runs in.
	appSet := decode(strings.ReplaceAll(blocks[0], "{{name}}", "in-cluster"))
	// Flux substitutes the Kustomization's variables in what it applies.
	substitute := decode(blocks[1]).Spec.PostBuild.Substitute
	release := blocks[2]
	for k, v := range substitute {
		release = strings.ReplaceAll(release, "${"+k+"}", v)
	}
	helmRelease := decode(release)
	src := appSet.Spec.Template.Spec.Source
	if appSet.Kind != "ApplicationSet" || src.RepoURL != "ghcr.io/nsman/charts" || src.Chart != "nsman" || helmRelease.Kind != "HelmRelease" || helmRelease.Spec.Chart.Spec.Chart != "nsman" {
		t.Errorf("the examples install %s %s/%s and %s %s: want the chart nsman from ghcr.io/nsman/charts", appSet.Kind, src.RepoURL, src.Chart, helmRelease.Kind, helmRelease.Spec.Chart.Spec.Chart)
	}
	for _, tc := range []struct {
		name, cluster string
		values        map[string]any
	}{
		{"ApplicationSet", "in-cluster", src.Helm.ValuesObject},
		{"HelmRelease", substitute["cluster_name"], helmRelease.Spec.Values},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, err := json.Marshal(tc.values)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "values.json")
			if err := os.WriteFile(path, values, 0o600); err != nil {
				t.Fatal(err)
			}
			wantArgs(t, render(t, "-f", path), "--pushgateway-url=https://pushgateway.example.com", "--cluster-name="+tc.cluster)
		})
	}
}
