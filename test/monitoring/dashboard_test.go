package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/test/nsmantest"
)

// dashboardFile is nsman's Grafana dashboard, which the chart's ConfigMap
// holds too.
const dashboardFile = "deploy/monitoring/nsman-dashboard.json"

// The parts of a Grafana dashboard the tests read.
type (
	dashboard struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	panel struct {
		ID         int        `json:"id"`
		Title      string     `json:"title"`
		Datasource datasource `json:"datasource"`
		Targets    []struct {
			RefID      string     `json:"refId"`
			Expr       string     `json:"expr"`
			Datasource datasource `json:"datasource"`
		} `json:"targets"`
	}
	datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
)

// grafanaVariables are what the tests put for the variables Grafana
// expands in a query: values as Grafana would give them over the
// timelines, $cluster as its All (the variable's allValue).
var grafanaVariables = strings.NewReplacer("$cluster", ".*", "$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// TestDashboardUsesItsDatasourceVariable: every panel and query reads the
// Prometheus the dashboard's datasource variable names, none a data
// source of one Grafana's.
func TestDashboardUsesItsDatasourceVariable(t *testing.T) {
	d := readDashboard(t)
	var variable bool
	for _, v := range d.Templating.List {
		variable = variable || v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}
	if !variable {
		t.Errorf("%s: no variable datasource of type datasource for prometheus", dashboardFile)
	}
	want := datasource{Type: "prometheus", UID: "${datasource}"}
	for _, p := range d.Panels {
		if p.Datasource != want {
			t.Errorf("panel %q: datasource %+v, want %+v", p.Title, p.Datasource, want)
		}
		for _, q := range p.Targets {
			if q.Datasource != want {
				t.Errorf("panel %q, query %s: datasource %+v, want %+v", p.Title, q.RefID, q.Datasource, want)
			}
		}
	}
}

// TestDashboardQueriesReadPushedSeries runs every query of the dashboard
// as a recording rule, which promtool check rules parses, and checks with
// promtool test rules that each returns series from what a real
// Pushgateway serves after nsman's own code pushed sweeps' reports: a
// query that does not parse, or names a metric or label value nsman does
// not push, fails here.
func TestDashboardQueriesReadPushedSeries(t *testing.T) {
	d := readDashboard(t)
	if len(d.Panels) < 6 {
		t.Fatalf("%s: %d panels, want at least 6", dashboardFile, len(d.Panels))
	}
	type recorded struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var records []recorded
	group := testGroup{Name: "dashboard", Interval: "1m",
		InputSeries: record(t, []step{{60, healthy}, {60, shardOneOfTwo(failing)}, {60, stuck}}).inputSeries()}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			expr := grafanaVariables.Replace(q.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q, query %s: %q has a variable the test does not know", p.Title, q.RefID, q.Expr)
				continue
			}
			name := fmt.Sprintf("dashboard_panel_%d_%s", p.ID, q.RefID)
			records = append(records, recorded{name, expr})
			// At the end of each timeline, the query returns series.
			for _, minute := range []int{59, 119, 179} {
				group.ExprTests = append(group.ExprTests, promqlExprTest{
					Expr: "count(" + name + ") > bool 0", EvalTime: minutes(minute), ExpSamples: []expSample{{Labels: "{}", Value: 1}},
				})
			}
		}
	}
	rules, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": records}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	nsmantest.Promtool(t, "check", "rules", path)
	runRuleTests(t, ruleTestFile{RuleFiles: []string{path}, EvaluationInterval: "1m", Tests: []testGroup{group}})
}
