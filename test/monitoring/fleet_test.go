package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/test/nsmantest"
)

// A fleet's clusters push to one Pushgateway, each with a --cluster-name
// of its own: east's namespaces stay stuck, west's sweeps fail after ten
// minutes, south is sharded and healthy.
var fleet = map[string][]step{
	"east":  {{120, stuck}},
	"west":  {{10, healthy}, {110, failing}},
	"south": {{120, shardOneOfTwo(healthy)}},
}

// clusterLabel finds the cluster label of a series in promtool's notation.
var clusterLabel = regexp.MustCompile(`cluster="([^"]*)"`)

// TestPushedSeriesCarryTheCluster: every series a real Pushgateway serves
// after nsman pushed with a cluster name carries cluster="<name>", shards'
// too, and each cluster's last success is its own.
func TestPushedSeriesCarryTheCluster(t *testing.T) {
	got := recordFleet(t, map[string][]step{"east": {{2, healthy}}, "west": {{2, failing}}, "south": {{2, shardOneOfTwo(healthy)}}})
	clusters := map[string]int{}
	for series := range got {
		m := clusterLabel.FindStringSubmatch(series)
		if m == nil || m[1] == "south" && !strings.Contains(series, `shard="1"`) {
			t.Errorf("%s: no cluster label, or no shard of cluster south", series)
			continue
		}
		clusters[m[1]]++
	}
	if len(clusters) != 3 || clusters["east"] != clusters["south"] || clusters["west"] != clusters["east"]-1 {
		t.Errorf("series by cluster %v: want each cluster's alike, but for west's last success, which it has none of", clusters)
	}
	for _, series := range []string{`nsman_last_success_timestamp_seconds{cluster="east",job="nsman"}`, `nsman_last_success_timestamp_seconds{cluster="south",job="nsman",shard="1"}`} {
		if v := got[series]; strings.Join(v, " ") != "0 60" {
			t.Errorf("%s: %q, want the success of each minute", series, v)
		}
	}
}

// TestAlertsFireForEachClusterOfAFleet: the alerts tell the clusters of a
// fleet apart, each alert naming the cluster it is about; one cluster's
// successes hide no other's failures.
func TestAlertsFireForEachClusterOfAFleet(t *testing.T) {
	rules := alertRules(t)
	group := testGroup{Name: "a fleet", Interval: "1m", InputSeries: recordFleet(t, fleet).inputSeries()}
	for _, c := range []alertCheck{
		{45, "NsmanSweepsFailing", []firing{{"job": "nsman", "cluster": "west"}}},
		{45, "NsmanActionsFailing", []firing{{"job": "nsman", "cluster": "west", "action": "WEBHOOK"}}},
		{45, "NsmanNotificationsFailing", []firing{{"job": "nsman", "cluster": "west"}}},
		{45, "NsmanNamespacesStuck", []firing{{"job": "nsman", "cluster": "east", "reason": "FinalizersRemaining"}}},
		{45, "NsmanNoSuccessfulSweep", nil},
		// West's last success, at minute 9, is 66 minutes old.
		{75, "NsmanNoSuccessfulSweep", []firing{{"job": "nsman", "cluster": "west"}}},
		{75, "NsmanMetricsAbsent", nil},
	} {
		test := alertRuleTest{EvalTime: minutes(c.minute), Alertname: c.alert, ExpAlerts: []expAlert{}}
		for _, f := range c.firing {
			test.ExpAlerts = append(test.ExpAlerts, expected(t, rules[c.alert], f))
		}
		group.AlertRuleTests = append(group.AlertRuleTests, test)
	}
	runRuleTests(t, ruleTestFile{RuleFiles: []string{filepath.Join(nsmantest.RepoRoot(), alertsFile)}, EvaluationInterval: "1m", Tests: []testGroup{group}})
}

// TestDashboardFiltersByCluster: the dashboard has a variable cluster of
// the clusters nsman pushed for, several or all of them, and every query
// reads the clusters it selects alone: each returns series for a cluster
// of the fleet, none for a cluster that pushed nothing.
func TestDashboardFiltersByCluster(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var vars struct {
		Templating struct {
			List []struct {
				Name, Type, Query, AllValue string
				Multi, IncludeAll           bool
				Datasource                  datasource
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &vars); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var found bool
	for _, v := range vars.Templating.List {
		if v.Name != "cluster" {
			continue
		}
		found = true
		if want := `label_values(nsman_sweep_duration_seconds{job="nsman"}, cluster)`; v.Type != "query" || v.Query != want ||
			!v.Multi || !v.IncludeAll || v.AllValue != ".*" || v.Datasource != (datasource{Type: "prometheus", UID: "${datasource}"}) {
			t.Errorf("variable cluster %+v: want a query %s of the dashboard's datasource, several values or All (.*, which matches no label too)", v, want)
		}
	}
	if !found {
		t.Fatalf("%s: no variable cluster", dashboardFile)
	}

	type recorded struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var records []recorded
	group := testGroup{Name: "dashboard of a fleet", Interval: "1m", InputSeries: recordFleet(t, fleet).inputSeries()}
	for _, p := range readDashboard(t).Panels {
		for _, q := range p.Targets {
			for _, c := range []struct {
				cluster string
				series  []expSample
			}{{"west", []expSample{{Labels: "{}", Value: 1}}}, {"east|south", []expSample{{Labels: "{}", Value: 1}}}, {"nowhere", []expSample{}}} {
				expr := grafanaVariables.Replace(strings.ReplaceAll(q.Expr, "$cluster", c.cluster))
				name := fmt.Sprintf("dashboard_panel_%d_%s_%s", p.ID, q.RefID, strings.ReplaceAll(c.cluster, "|", "_"))
				records = append(records, recorded{name, expr})
				group.ExprTests = append(group.ExprTests, promqlExprTest{Expr: "count(" + name + ") > bool 0", EvalTime: minutes(119), ExpSamples: c.series})
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
	runRuleTests(t, ruleTestFile{RuleFiles: []string{path}, EvaluationInterval: "1m", Tests: []testGroup{group}})
}
