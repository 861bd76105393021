package integration

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/nsman/nsman/metrics"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestMetricsPushedToPushgateway has nsman sweep --pushgateway-url push the
// metrics of a successful sweep and then of a failed one to a real
// Pushgateway, and reads back what the Pushgateway exposes to Prometheus: the
// failed sweep replaces every count but leaves the last success timestamp
// alone.
func TestMetricsPushedToPushgateway(t *testing.T) {
	e := setup(t)
	gw := nsmantest.StartPushgateway(t)

	due := shared.Namespace(t)
	createManager(t, managerObj(due, due, due, []any{ttlPolicy("delete when old", 0, deleteAction)}))
	res := e.Sweep(t, "-l", caseLabel+"="+due, "--pushgateway-url", gw)
	wantCode(t, res, 0)
	wantState(t, res, due, due, report.StateFired)
	wantPushed(t, res)

	m := scrapePushgateway(t, gw)
	if v := m.value(t, "nsman_sweep_duration_seconds", nil); v <= 0 || v != res.Report.Summary.DurationSeconds {
		t.Errorf("nsman_sweep_duration_seconds %v, want the report's %v", v, res.Report.Summary.DurationSeconds)
	}
	m.want(t, "nsman_managers", labels("state", "fired"), 1)
	m.want(t, "nsman_managers", labels("state", "failed"), 0)
	m.want(t, "nsman_actions", labels("action", "DELETE", "result", "succeeded"), 1)
	m.want(t, "nsman_actions", labels("action", "WEBHOOK", "result", "failed"), 0)
	m.want(t, "nsman_dry_run", nil, 0)
	// A manager that deletes its own namespace costs one write: the DELETE.
	if v := m.value(t, "nsman_api_requests", labels("method", "delete")); v != 1 {
		t.Errorf("nsman_api_requests{method=delete} %v, want the one DELETE", v)
	}
	if v, want := m.value(t, "nsman_api_requests", labels("method", "get")), float64(res.Report.Summary.Requests["get"]); v <= 0 || v != want {
		t.Errorf("nsman_api_requests{method=get} %v, want the report's %v", v, want)
	}
	lastSuccess := m.value(t, "nsman_last_success_timestamp_seconds", nil)
	if d := time.Since(time.UnixMilli(int64(lastSuccess * 1e3))); d.Abs() > time.Minute {
		t.Errorf("nsman_last_success_timestamp_seconds %v is %v away from now", lastSuccess, d)
	}

	// A webhook whose receiver answers 500 fails the next sweep.
	hook := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	recv.SetStatus(http.StatusInternalServerError)
	createManager(t, managerObj(hook, hook, hook, []any{ttlPolicy("notify at once", 0, webhookAction(recv.URL+"/hook"))}))
	res = e.Sweep(t, "-l", caseLabel+"="+hook, "--pushgateway-url", gw)
	wantCode(t, res, 1)
	wantState(t, res, hook, hook, report.StateFailed)
	wantPushed(t, res)

	m = scrapePushgateway(t, gw)
	m.want(t, "nsman_actions", labels("action", "WEBHOOK", "result", "failed"), 1)
	m.want(t, "nsman_actions", labels("action", "DELETE", "result", "succeeded"), 0)
	m.want(t, "nsman_managers", labels("state", "failed"), 1)
	m.want(t, "nsman_managers", labels("state", "fired"), 0)
	m.want(t, "nsman_last_success_timestamp_seconds", nil, lastSuccess)
}

// wantPushed fails when nsman sweep logged that its push failed: a failed
// push does not change the exit code.
func wantPushed(t *testing.T, res nsmantest.Result) {
	t.Helper()
	if strings.Contains(res.Stderr, "metrics not pushed") {
		t.Fatalf("the sweep did not push its metrics:\n%s", res.Stderr)
	}
}

// scraped is what a Pushgateway exposes on /metrics, by metric name.
type scraped map[string]*dto.MetricFamily

// scrapePushgateway reads the Pushgateway's /metrics as Prometheus would.
func scrapePushgateway(t *testing.T, url string) scraped {
	t.Helper()
	return nsmantest.ScrapePushgateway(t, url)
}

// labels builds a label set from name, value pairs.
func labels(nameValues ...string) map[string]string {
	l := map[string]string{}
	for i := 0; i+1 < len(nameValues); i += 2 {
		l[nameValues[i]] = nameValues[i+1]
	}
	return l
}

// value returns the one series of name that nsman's job pushed with labels
// l among its labels; the Pushgateway adds the grouping key's (job, and an
// empty instance).
func (s scraped) value(t *testing.T, name string, l map[string]string) float64 {
	t.Helper()
	want := map[string]string{"job": metrics.DefaultMetricsJob}
	maps.Copy(want, l)
	mf, ok := s[name]
	if !ok {
		t.Fatalf("the Pushgateway exposes no %s", name)
	}
	var found []float64
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if subset(want, got) && mf.GetType() == dto.MetricType_COUNTER {
			found = append(found, m.GetCounter().GetValue())
		} else if subset(want, got) {
			found = append(found, m.GetGauge().GetValue())
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d series %s%v, want 1; the family:\n%v", len(found), name, want, mf)
	}
	return found[0]
}

func (s scraped) want(t *testing.T, name string, l map[string]string, want float64) {
	t.Helper()
	if got := s.value(t, name, l); got != want {
		t.Errorf("%s%v = %v, want %v", name, l, got, want)
	}
}

func subset(want, got map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
