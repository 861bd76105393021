package integration

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsman/nsman/test/nsmantest"
)

// The monitoring files of deploy/ that the chart keeps a copy of in its
// files/, and the kind it renders from each.
const (
	alertsFile       = "deploy/monitoring/nsman-alerts.yaml"
	dashboardFile    = "deploy/monitoring/nsman-dashboard.json"
	prometheusRule   = "PrometheusRule"
	dashboardCM      = chartRelease + "-dashboard"
	dashboardCMKey   = "nsman.json"
	grafanaLabel     = "grafana_dashboard"
	chartRuleLabel   = "app.kubernetes.io/name"
	monitoringValues = "monitoring-values.yaml"
)

// repoFile reads a file of the repository.
func repoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantPrometheusRule checks the rendered PrometheusRule: in namespace,
// with the chart's labels and labels, and the groups of alertsFile, each
// alert's labels with ruleLabels over them; and promtool check rules takes
// its groups.
func wantPrometheusRule(t *testing.T, r rendered, namespace string, labels, ruleLabels map[string]string) {
	t.Helper()
	obj := r.find(prometheusRule)
	if obj == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	if obj.GetAPIVersion() != "monitoring.coreos.com/v1" || obj.GetName() != chartRelease || obj.GetNamespace() != namespace {
		t.Errorf("PrometheusRule %s %s/%s, want monitoring.coreos.com/v1 %s/%s", obj.GetAPIVersion(), obj.GetNamespace(), obj.GetName(), namespace, chartRelease)
	}
	wantLabels(t, obj, labels)
	var file map[string]any
	if err := utilyaml.Unmarshal(repoFile(t, alertsFile), &file); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	groups, _ := file["groups"].([]any)
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, rule := range rules {
			rule := rule.(map[string]any)
			l, _ := rule["labels"].(map[string]any)
			if l == nil {
				l = map[string]any{}
			}
			for k, v := range ruleLabels {
				l[k] = v
			}
			rule["labels"] = l
		}
	}
	got, _, _ := unstructured.NestedSlice(obj.Object, "spec", "groups")
	if len(groups) == 0 || !reflect.DeepEqual(normalized(t, got), normalized(t, groups)) {
		t.Errorf("PrometheusRule groups differ from %s's with labels %v:\n%v\nwant\n%v", alertsFile, ruleLabels, got, groups)
	}
	data, err := json.Marshal(map[string]any{"groups": got}) // YAML, as JSON is
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	nsmantest.Promtool(t, "check", "rules", path)
}

// wantDashboard checks the rendered dashboard ConfigMap: in namespace,
// with the chart's labels and labels, annotations, and dashboardFile.
func wantDashboard(t *testing.T, r rendered, namespace string, labels, annotations map[string]string) {
	t.Helper()
	obj := dashboardConfigMap(r)
	if obj == nil {
		t.Fatalf("no ConfigMap %s rendered", dashboardCM)
	}
	if obj.GetNamespace() != namespace {
		t.Errorf("ConfigMap %s in namespace %q, want %q", dashboardCM, obj.GetNamespace(), namespace)
	}
	wantLabels(t, obj, labels)
	if got := obj.GetAnnotations(); !maps.Equal(got, annotations) {
		t.Errorf("ConfigMap %s annotations %v, want %v", dashboardCM, got, annotations)
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	if want := string(repoFile(t, dashboardFile)); len(data) != 1 || data[dashboardCMKey]+"\n" != want {
		t.Errorf("ConfigMap %s data keys %v: want %s alone, holding %s", dashboardCM, slices.Sorted(maps.Keys(data)), dashboardCMKey, dashboardFile)
	}
}

// wantNoMonitoring fails t when r holds a PrometheusRule or the dashboard.
func wantNoMonitoring(t *testing.T, r rendered) {
	t.Helper()
	if obj := r.find(prometheusRule); obj != nil {
		t.Errorf("PrometheusRule %s rendered, want none", obj.GetName())
	}
	if obj := dashboardConfigMap(r); obj != nil {
		t.Errorf("ConfigMap %s rendered, want none", obj.GetName())
	}
}

func dashboardConfigMap(r rendered) *unstructured.Unstructured {
	for _, o := range r.objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == dashboardCM {
			return o
		}
	}
	return nil
}

// wantLabels checks that obj has the chart's labels and labels.
func wantLabels(t *testing.T, obj *unstructured.Unstructured, labels map[string]string) {
	t.Helper()
	got := obj.GetLabels()
	if got[chartRuleLabel] != "nsman" || got["app.kubernetes.io/instance"] != chartRelease {
		t.Errorf("%s %s labels %v lack the chart's", obj.GetKind(), obj.GetName(), got)
	}
	for k, v := range labels {
		if got[k] != v {
			t.Errorf("%s %s label %s=%q, want %q", obj.GetKind(), obj.GetName(), k, got[k], v)
		}
	}
}

// withoutPrometheusRules are objs but the PrometheusRules, which no API
// server of the tests can take: it has no Prometheus Operator CRDs.
// wantPrometheusRule checks their groups with promtool instead.
func withoutPrometheusRules(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != prometheusRule {
			out = append(out, o)
		}
	}
	return out
}

// checkMonitoringValues is ci/monitoring-values.yaml's check.
func checkMonitoringValues(t *testing.T, r rendered) {
	wantArgs(t, r, "--pushgateway-url=http://pushgateway.monitoring:9091", "--cluster-name=eu-west-1")
	wantPrometheusRule(t, r, chartNamespace, map[string]string{"release": "kube-prometheus-stack"}, map[string]string{"team": "platform"})
	wantDashboard(t, r, "monitoring", map[string]string{grafanaLabel: "1"}, map[string]string{"grafana_folder": "nsman"})
}
