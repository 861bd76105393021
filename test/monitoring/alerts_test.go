package monitoring

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/test/nsmantest"
)

// alertsFile is nsman's alerting rules, which the chart's PrometheusRule
// holds too.
const alertsFile = "deploy/monitoring/nsman-alerts.yaml"

// The parts of a promtool test file (promtool test rules) the tests write.
type (
	ruleTestFile struct {
		RuleFiles          []string    `json:"rule_files"`
		EvaluationInterval string      `json:"evaluation_interval"`
		Tests              []testGroup `json:"tests"`
	}
	testGroup struct {
		Name           string           `json:"name"`
		Interval       string           `json:"interval"`
		InputSeries    []inputSeries    `json:"input_series"`
		AlertRuleTests []alertRuleTest  `json:"alert_rule_test,omitempty"`
		ExprTests      []promqlExprTest `json:"promql_expr_test,omitempty"`
	}
	inputSeries struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	alertRuleTest struct {
		EvalTime  string     `json:"eval_time"`
		Alertname string     `json:"alertname"`
		ExpAlerts []expAlert `json:"exp_alerts"`
	}
	expAlert struct {
		ExpLabels      map[string]string `json:"exp_labels"`
		ExpAnnotations map[string]string `json:"exp_annotations"`
	}
	promqlExprTest struct {
		Expr       string      `json:"expr"`
		EvalTime   string      `json:"eval_time"`
		ExpSamples []expSample `json:"exp_samples"`
	}
	expSample struct {
		Labels string  `json:"labels"`
		Value  float64 `json:"value"`
	}
)

// rule is an alerting rule of alertsFile.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// alertRules reads the rules of alertsFile, by alert name.
func alertRules(t *testing.T) map[string]rule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), alertsFile))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	rules := map[string]rule{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if _, dup := rules[r.Alert]; dup || r.Alert == "" {
				t.Fatalf("%s: alert %q named twice, or a rule with no alert", alertsFile, r.Alert)
			}
			rules[r.Alert] = r
		}
	}
	return rules
}

// firing is an alert expected to fire: its labels beyond alertname and the
// rule's own.
type firing map[string]string

// alertCheck is what one alert does at one time of a timeline: fire with
// each of firing, or stay quiet (none).
type alertCheck struct {
	minute int
	alert  string
	firing []firing
}

// alertTimelines are sweeps as a Pushgateway sees them, and what each
// alert does along them. Every alert must fire in one and stay quiet in
// another (TestAlertsFireOnPushedSeries checks that it does).
var alertTimelines = []struct {
	name   string
	steps  []step
	checks []alertCheck
}{
	{"healthy sweeps", []step{{120, healthy}}, []alertCheck{
		{119, "NsmanNoSuccessfulSweep", nil},
		{119, "NsmanMetricsAbsent", nil},
		{119, "NsmanSweepsFailing", nil},
		{119, "NsmanActionsFailing", nil},
		{119, "NsmanNamespacesStuck", nil},
		{119, "NsmanNotificationsFailing", nil},
	}},
	{"a shard's sweeps fail after ten minutes", []step{{10, shardOneOfTwo(healthy)}, {110, shardOneOfTwo(failing)}}, []alertCheck{
		// Failing since minute 10: two failed sweeps are not yet a pattern.
		{11, "NsmanSweepsFailing", nil},
		{11, "NsmanActionsFailing", nil},
		{11, "NsmanNotificationsFailing", nil},
		{45, "NsmanSweepsFailing", []firing{{"job": "nsman", "shard": "1"}}},
		{45, "NsmanActionsFailing", []firing{{"job": "nsman", "shard": "1", "action": "WEBHOOK"}}},
		{45, "NsmanNotificationsFailing", []firing{{"job": "nsman", "shard": "1"}}},
		// The last success, at minute 9, is 36 minutes old, then 66.
		{45, "NsmanNoSuccessfulSweep", nil},
		{75, "NsmanNoSuccessfulSweep", []firing{{"job": "nsman", "shard": "1"}}},
		{75, "NsmanMetricsAbsent", nil},
	}},
	{"sweeps stop after ten minutes", []step{{10, healthy}, {80, nil}}, []alertCheck{
		// The Pushgateway goes on serving the last sweep's metrics.
		{65, "NsmanNoSuccessfulSweep", nil},
		{75, "NsmanNoSuccessfulSweep", []firing{{"job": "nsman"}}},
		{75, "NsmanSweepsFailing", nil},
		{75, "NsmanMetricsAbsent", nil},
	}},
	{"no sweep ever succeeds", []step{{90, failing}}, []alertCheck{
		{45, "NsmanMetricsAbsent", nil},
		{75, "NsmanMetricsAbsent", []firing{{"job": "nsman"}}},
		{75, "NsmanNoSuccessfulSweep", nil},
	}},
	// Failures 1, 2, 4, 8 ... minutes apart, then an hour and a minute
	// (a sweep that started a little sooner than the one that failed),
	// deferred in between; the receiver is back at minute 307.
	{"a WEBHOOK's receiver is down and its delivery backs off", []step{
		{307, inMinutes(webhookDown, webhookWaits, 0, 1, 3, 7, 15, 31, 63, 124, 185, 246)}, {18, healthy},
	}, []alertCheck{
		{2, "NsmanSweepsFailing", nil},
		{2, "NsmanActionsFailing", nil},
		{3, "NsmanSweepsFailing", []firing{{"job": "nsman"}}},
		{3, "NsmanActionsFailing", []firing{{"job": "nsman", "action": "WEBHOOK"}}},
		// Once an hour is as often as the delivery is tried.
		{100, "NsmanSweepsFailing", []firing{{"job": "nsman"}}},
		{240, "NsmanActionsFailing", []firing{{"job": "nsman", "action": "WEBHOOK"}}},
		// A minute before the next attempt, an hour after the last.
		{245, "NsmanSweepsFailing", []firing{{"job": "nsman"}}},
		{245, "NsmanActionsFailing", []firing{{"job": "nsman", "action": "WEBHOOK"}}},
		{300, "NsmanSweepsFailing", []firing{{"job": "nsman"}}},
		{300, "NsmanActionsFailing", []firing{{"job": "nsman", "action": "WEBHOOK"}}},
		// The sweeps between attempts succeed.
		{300, "NsmanNoSuccessfulSweep", nil},
		// More than 75 minutes since the last failure.
		{323, "NsmanSweepsFailing", nil},
		{323, "NsmanActionsFailing", nil},
	}},
	{"a sweep fails once", []step{{10, healthy}, {1, failing}, {110, healthy}}, []alertCheck{
		{11, "NsmanSweepsFailing", nil},
		{11, "NsmanActionsFailing", nil},
		{11, "NsmanNotificationsFailing", nil},
		{60, "NsmanSweepsFailing", nil},
		{60, "NsmanActionsFailing", nil},
		{119, "NsmanSweepsFailing", nil},
		{119, "NsmanActionsFailing", nil},
		{119, "NsmanNotificationsFailing", nil},
	}},
	{"notifications are lost in a quiet cluster", []step{{120, inMinutes(notificationLost, quiet, 0, 30, 60, 90)}}, []alertCheck{
		{59, "NsmanNotificationsFailing", nil},
		{60, "NsmanNotificationsFailing", []firing{{"job": "nsman"}}},
		{119, "NsmanNotificationsFailing", []firing{{"job": "nsman"}}},
		{119, "NsmanActionsFailing", nil},
	}},
	{"a dry-run install", []step{{130, dryRun}}, []alertCheck{
		{75, "NsmanMetricsAbsent", nil},
		{129, "NsmanMetricsAbsent", nil},
		{129, "NsmanNoSuccessfulSweep", nil},
	}},
	{"sweeps switch to dry run after ten minutes", []step{{10, healthy}, {120, dryRun}}, []alertCheck{
		{75, "NsmanNoSuccessfulSweep", nil},
		{129, "NsmanNoSuccessfulSweep", nil},
		{129, "NsmanMetricsAbsent", nil},
	}},
	{"a dry run, then real sweeps that all fail", []step{{10, dryRun}, {80, failing}}, []alertCheck{
		// Not dry since minute 10.
		{65, "NsmanMetricsAbsent", nil},
		{75, "NsmanMetricsAbsent", []firing{{"job": "nsman"}}},
	}},
	{"a namespace stays stuck", []step{{60, stuck}}, []alertCheck{
		{20, "NsmanNamespacesStuck", nil},
		{45, "NsmanNamespacesStuck", []firing{{"job": "nsman", "reason": "FinalizersRemaining"}}},
		{45, "NsmanSweepsFailing", nil},
	}},
}

// TestAlertsFireOnPushedSeries runs promtool test rules on alertsFile with
// the series a real Pushgateway serves along each of alertTimelines, after
// nsman's own code pushed each sweep's report, named as it names them: a
// metric renamed or relabelled in metrics/ fails here. Each alert fires in
// one timeline and stays quiet in another.
func TestAlertsFireOnPushedSeries(t *testing.T) {
	rules := alertRules(t)
	fired, quiet := map[string]bool{}, map[string]bool{}
	file := ruleTestFile{RuleFiles: []string{filepath.Join(nsmantest.RepoRoot(), alertsFile)}, EvaluationInterval: "1m"}
	for _, tl := range alertTimelines {
		group := testGroup{Name: tl.name, Interval: "1m", InputSeries: record(t, tl.steps).inputSeries()}
		for _, c := range tl.checks {
			r, ok := rules[c.alert]
			if !ok {
				t.Fatalf("%s: no alert %s in %s", tl.name, c.alert, alertsFile)
			}
			test := alertRuleTest{EvalTime: minutes(c.minute), Alertname: c.alert, ExpAlerts: []expAlert{}}
			for _, f := range c.firing {
				test.ExpAlerts = append(test.ExpAlerts, expected(t, r, f))
			}
			group.AlertRuleTests = append(group.AlertRuleTests, test)
			fired[c.alert] = fired[c.alert] || len(c.firing) > 0
			quiet[c.alert] = quiet[c.alert] || len(c.firing) == 0
		}
		file.Tests = append(file.Tests, group)
	}
	for name := range rules {
		if !fired[name] || !quiet[name] {
			t.Errorf("alert %s: fires in a timeline %v, stays quiet in one %v: want both", name, fired[name], quiet[name])
		}
	}
	runRuleTests(t, file)
}

// expected is the alert r raises with labels f: the rule's labels and f's,
// the rule's annotations expanded as Prometheus expands them.
func expected(t *testing.T, r rule, f firing) expAlert {
	t.Helper()
	labels := map[string]string{"alertname": r.Alert}
	for k, v := range r.Labels {
		labels[k] = v
	}
	for k, v := range f {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, text := range r.Annotations {
		annotations[k] = expand(t, text, labels)
	}
	delete(labels, "alertname")
	return expAlert{ExpLabels: labels, ExpAnnotations: annotations}
}

// expand expands an annotation's template as Prometheus does, with the
// alert's labels as $labels.
func expand(t *testing.T, text string, labels map[string]string) string {
	t.Helper()
	tmpl, err := template.New("annotation").Option("missingkey=zero").Parse("{{$labels := .Labels}}" + text)
	if err != nil {
		t.Fatalf("annotation %q: %v", text, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ Labels map[string]string }{labels}); err != nil {
		t.Fatalf("annotation %q: %v", text, err)
	}
	return out.String()
}

// runRuleTests writes file where promtool reads it and runs promtool test
// rules on it.
func runRuleTests(t *testing.T, file ruleTestFile) {
	t.Helper()
	data, err := json.MarshalIndent(file, "", "  ") // YAML, as JSON is
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tests.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := nsmantest.RunPromtool(t, "test", "rules", path); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestAlertRulesCheck runs promtool check rules, its linter included, on
// alertsFile.
func TestAlertRulesCheck(t *testing.T) {
	nsmantest.Promtool(t, "check", "rules", "--lint=all", "--lint-fatal", alertsFile)
}

// runbookAnchor is the runbook_url every alert has: its section of
// docs/alerts.md.
var runbookAnchor = regexp.MustCompile(`^https://github\.com/nsman/nsman/blob/main/docs/alerts\.md#([a-z0-9-]+)$`)

// TestAlertsHaveRunbooks: every alert has a summary, a description, a
// severity and a runbook_url to a section of docs/alerts.md named after
// it, and every such section is an alert's.
func TestAlertsHaveRunbooks(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for line := range strings.SplitSeq(string(docs), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			sections = append(sections, name)
		}
	}
	rules := alertRules(t)
	for name, r := range rules {
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: summary %q, description %q: want both", name, r.Annotations["summary"], r.Annotations["description"])
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q, want warning or critical", name, s)
		}
		m := runbookAnchor.FindStringSubmatch(r.Annotations["runbook_url"])
		if m == nil || m[1] != strings.ToLower(name) {
			t.Errorf("%s: runbook_url %q, want docs/alerts.md#%s", name, r.Annotations["runbook_url"], strings.ToLower(name))
		}
		if !slices.Contains(sections, name) {
			t.Errorf("docs/alerts.md has no section ### %s", name)
		}
	}
	for _, s := range sections {
		if _, ok := rules[s]; !ok {
			t.Errorf("docs/alerts.md has a section ### %s, which is no alert of %s", s, alertsFile)
		}
	}
}
