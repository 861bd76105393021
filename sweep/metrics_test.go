package sweep

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/nsman/nsman/policy"
)

// fakeGateway is a Pushgateway's push API on loopback: it decodes what is
// pushed and keeps each group the way the Pushgateway does, a PUT replacing
// the whole group and a POST only the metric families it carries.
type fakeGateway struct {
	URL string

	mu       sync.Mutex
	status   int
	requests []pushRequest
	groups   map[string]map[string]*dto.MetricFamily // by URL path, then by name
}

// pushRequest is one push the fakeGateway got.
type pushRequest struct {
	Method, Path, ContentType string
	Families                  map[string]*dto.MetricFamily
}

func newFakeGateway(t *testing.T) *fakeGateway {
	g := &fakeGateway{status: http.StatusOK, groups: map[string]map[string]*dto.MetricFamily{}}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func (g *fakeGateway) serve(w http.ResponseWriter, req *http.Request) {
	fams := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(req.Body, expfmt.ResponseFormat(req.Header))
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fams[mf.GetName()] = mf
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, pushRequest{Method: req.Method, Path: req.URL.Path, ContentType: req.Header.Get("Content-Type"), Families: fams})
	if g.status != http.StatusOK {
		http.Error(w, "refused", g.status)
		return
	}
	switch req.Method {
	case http.MethodPut:
		g.groups[req.URL.Path] = maps.Clone(fams)
	case http.MethodPost:
		if g.groups[req.URL.Path] == nil {
			g.groups[req.URL.Path] = map[string]*dto.MetricFamily{}
		}
		maps.Copy(g.groups[req.URL.Path], fams)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// Requests returns the pushes so far.
func (g *fakeGateway) Requests() []pushRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

// Group returns what the gateway holds for a grouping key's URL path.
func (g *fakeGateway) Group(path string) map[string]*dto.MetricFamily {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.groups[path])
}

// gaugeValue returns the value of the gauge series name{labels} in fams.
func gaugeValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf, ok := fams[name]
	if !ok || mf.GetType() != dto.MetricType_GAUGE {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, labels) {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// series is one expected gauge series.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

func wantSeries(t *testing.T, fams map[string]*dto.MetricFamily, want ...series) {
	t.Helper()
	for _, s := range want {
		got, ok := gaugeValue(fams, s.name, s.labels)
		if !ok {
			t.Errorf("no gauge %s%v", s.name, s.labels)
			continue
		}
		if got != s.value {
			t.Errorf("%s%v = %v, want %v", s.name, s.labels, got, s.value)
		}
	}
}

func state(s State) map[string]string   { return map[string]string{"state": string(s)} }
func method(m string) map[string]string { return map[string]string{"method": m} }
func action(a, result string) map[string]string {
	return map[string]string{"action": a, "result": result}
}

// reportOf builds a Report of entries with the summary a sweep computes.
func reportOf(now time.Time, dryRun bool, requests map[string]int, entries ...Entry) Report {
	states := map[State]int{}
	for _, e := range entries {
		states[e.State]++
	}
	return Report{Version: ReportVersion, Entries: entries, Summary: Summary{
		Now: now, DryRun: dryRun, Managers: len(entries), States: states, Requests: requests, DurationSeconds: 1.25,
	}}
}

var metricsNow = time.Date(2026, 3, 1, 9, 30, 15, 500_000_000, time.UTC)

func TestPushMetricsOfASweep(t *testing.T) {
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, false, map[string]int{"get": 7, "patch": 5, "delete": 2, "post": 1},
		Entry{Name: "a", State: StateFired, Action: policy.ActionDelete},
		Entry{Name: "b", State: StateFired, Action: policy.ActionDelete},
		Entry{Name: "c", State: StateFired, Action: policy.ActionWebhook},
		Entry{Name: "d", State: StateFailed, Action: policy.ActionScaleDown},
		Entry{Name: "e", State: StateFailed}, // an API request failed before any action
		Entry{Name: "f", State: StateDeferred, Action: policy.ActionDelete},
		Entry{Name: "g", State: StateBusy, Action: policy.ActionDelete}, // another sweep acts
		Entry{Name: "h", State: StateWaiting},
		Entry{Name: "i", State: StateInvalid},
	)
	if err := PushMetrics(t.Context(), gw.URL, "", r, false, nil); err != nil {
		t.Fatal(err)
	}
	reqs := gw.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d pushes, want 1", len(reqs))
	}
	req := reqs[0]
	if req.Method != http.MethodPost || req.Path != "/metrics/job/nsman" {
		t.Errorf("pushed with %s %s, want POST /metrics/job/nsman", req.Method, req.Path)
	}
	wantSeries(t, req.Families,
		series{"nsman_sweep_duration_seconds", nil, 1.25},
		series{"nsman_dry_run", nil, 0},
		series{"nsman_managers", state(StateFired), 3},
		series{"nsman_managers", state(StateFailed), 2},
		series{"nsman_managers", state(StateDeferred), 1},
		series{"nsman_managers", state(StateBusy), 1},
		series{"nsman_managers", state(StateWaiting), 1},
		series{"nsman_managers", state(StateInvalid), 1},
		series{"nsman_managers", state(StatePlanned), 0},
		series{"nsman_managers", state(StateTargetMissing), 0},
		series{"nsman_actions", action("DELETE", "succeeded"), 2},
		series{"nsman_actions", action("DELETE", "deferred"), 1},
		series{"nsman_actions", action("DELETE", "failed"), 0},
		series{"nsman_actions", action("DELETE", "planned"), 0},
		series{"nsman_actions", action("WEBHOOK", "succeeded"), 1},
		series{"nsman_actions", action("SCALE_DOWN", "failed"), 1},
		series{"nsman_actions", action("SCALE_DOWN", "succeeded"), 0},
		series{"nsman_api_requests", method("get"), 7},
		series{"nsman_api_requests", method("patch"), 5},
		series{"nsman_api_requests", method("delete"), 2},
		series{"nsman_api_requests", method("post"), 1},
		series{"nsman_api_requests", method("put"), 0},
	)
	// Every action type and result has a series, and no other does: an
	// entry without an action, or a busy one, counts nowhere.
	if n := len(req.Families["nsman_actions"].GetMetric()); n != 3*4 {
		t.Errorf("nsman_actions has %d series, want 12", n)
	}
	if _, ok := req.Families["nsman_last_success_timestamp_seconds"]; ok {
		t.Error("a failed sweep pushed nsman_last_success_timestamp_seconds")
	}
	names := slices.Sorted(maps.Keys(req.Families))
	want := []string{"nsman_actions", "nsman_api_requests", "nsman_dry_run", "nsman_holds", "nsman_managers", "nsman_notifications", "nsman_sweep_duration_seconds"}
	if !slices.Equal(names, want) {
		t.Errorf("pushed %q, want %q", names, want)
	}
}

func TestPushMetricsOfADryRun(t *testing.T) {
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, true, map[string]int{"get": 3},
		Entry{Name: "a", State: StatePlanned, Action: policy.ActionDelete},
		Entry{Name: "b", State: StatePlanned, Action: policy.ActionWebhook},
	)
	if err := PushMetrics(t.Context(), gw.URL, "nsman-preview", r, true, nil); err != nil {
		t.Fatal(err)
	}
	req := gw.Requests()[0]
	if req.Path != "/metrics/job/nsman-preview" {
		t.Errorf("pushed to %s, want the job nsman-preview", req.Path)
	}
	wantSeries(t, req.Families,
		series{"nsman_dry_run", nil, 1},
		series{"nsman_managers", state(StatePlanned), 2},
		series{"nsman_actions", action("DELETE", "planned"), 1},
		series{"nsman_actions", action("WEBHOOK", "planned"), 1},
		series{"nsman_actions", action("DELETE", "succeeded"), 0},
		series{"nsman_last_success_timestamp_seconds", nil, float64(metricsNow.UnixMilli()) / 1e3},
	)
}

// Shards push side by side, each to a group of its own.
func TestPushMetricsOfShards(t *testing.T) {
	gw := newFakeGateway(t)
	for i := range 2 {
		r := reportOf(metricsNow, false, nil, Entry{Name: "a", State: StateFired, Action: policy.ActionDelete})
		r.Summary.Shard = &Shard{Index: i, Count: 2}
		if err := PushMetrics(t.Context(), gw.URL, "", r, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, req := range gw.Requests() {
		if want := fmt.Sprintf("/metrics/job/nsman/shard/%d", i); req.Path != want {
			t.Errorf("shard %d pushed to %s, want %s", i, req.Path, want)
		}
	}
}

// TestPushMetricsHasEveryState reads the State constants from report.go, so
// that a State added there without a nsman_managers series fails here.
func TestPushMetricsHasEveryState(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "report.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var states []State
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "State" {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					states = append(states, State(s))
				}
			}
		}
		return true
	})
	if len(states) < 10 {
		t.Fatalf("found only %d State constants in report.go: %q", len(states), states)
	}

	gw := newFakeGateway(t)
	if err := PushMetrics(t.Context(), gw.URL, "", reportOf(metricsNow, false, nil), true, nil); err != nil {
		t.Fatal(err)
	}
	fams := gw.Requests()[0].Families
	for _, s := range states {
		wantSeries(t, fams, series{"nsman_managers", state(s), 0})
	}
	if n := len(fams["nsman_managers"].GetMetric()); n != len(states) {
		t.Errorf("nsman_managers has %d series, want one per State (%d)", n, len(states))
	}
	// With no request counted, nsman_api_requests is still pushed, so that
	// it replaces the previous sweep's counts.
	wantSeries(t, fams, series{"nsman_api_requests", method("get"), 0})
}

// TestPushMetricsFailedSweepKeepsLastSuccess pushes a successful sweep and
// then a failed one to a gateway that keeps groups as the Pushgateway does:
// the failed sweep replaces every other metric but leaves the timestamp of
// the last success.
func TestPushMetricsFailedSweepKeepsLastSuccess(t *testing.T) {
	gw := newFakeGateway(t)
	ok := reportOf(metricsNow, false, map[string]int{"get": 2, "patch": 2, "delete": 1},
		Entry{Name: "a", State: StateFired, Action: policy.ActionDelete})
	if err := PushMetrics(t.Context(), gw.URL, "", ok, true, nil); err != nil {
		t.Fatal(err)
	}
	later := metricsNow.Add(10 * time.Minute)
	failed := reportOf(later, false, map[string]int{"get": 2, "patch": 2, "post": 1},
		Entry{Name: "b", State: StateFailed, Action: policy.ActionWebhook})
	if err := PushMetrics(t.Context(), gw.URL, "", failed, false, nil); err != nil {
		t.Fatal(err)
	}
	for i, req := range gw.Requests() {
		if req.Method != http.MethodPost {
			t.Errorf("push %d used %s: a PUT would replace the whole group and lose the last success", i, req.Method)
		}
	}
	wantSeries(t, gw.Group("/metrics/job/nsman"),
		series{"nsman_last_success_timestamp_seconds", nil, float64(metricsNow.UnixMilli()) / 1e3},
		series{"nsman_actions", action("WEBHOOK", "failed"), 1},
		series{"nsman_actions", action("DELETE", "succeeded"), 0},
		series{"nsman_managers", state(StateFired), 0},
		series{"nsman_managers", state(StateFailed), 1},
		series{"nsman_api_requests", method("delete"), 0},
		series{"nsman_api_requests", method("post"), 1},
	)

	// The next successful sweep moves the timestamp on.
	ok.Summary.Now = later.Add(10 * time.Minute)
	if err := PushMetrics(t.Context(), gw.URL, "", ok, true, nil); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, gw.Group("/metrics/job/nsman"),
		series{"nsman_last_success_timestamp_seconds", nil, float64(ok.Summary.Now.UnixMilli()) / 1e3})
}

func TestPushMetricsErrors(t *testing.T) {
	r := reportOf(metricsNow, false, nil)

	t.Run("refused", func(t *testing.T) {
		gw := newFakeGateway(t)
		gw.status = http.StatusBadRequest
		err := PushMetrics(t.Context(), gw.URL, "", r, true, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "push metrics") || !strings.Contains(err.Error(), "400") {
			t.Fatalf("error %v, want one that says the push got a 400", err)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		gw := newFakeGateway(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := PushMetrics(ctx, gw.URL, "", r, true, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if n := len(gw.Requests()); n != 0 {
			t.Errorf("%d pushes with a cancelled context", n)
		}
	})
	t.Run("client is used", func(t *testing.T) {
		gw := newFakeGateway(t)
		var used bool
		client := &http.Client{Transport: roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			used = true
			return http.DefaultTransport.RoundTrip(req)
		})}
		if err := PushMetrics(t.Context(), gw.URL, "", r, true, client); err != nil {
			t.Fatal(err)
		}
		if !used {
			t.Error("the push did not go through the given client")
		}
	})
}

// nsman_holds counts the entries a hold kept waiting and those whose holds
// were ignored, zero when none.
func TestPushMetricsCountsHolds(t *testing.T) {
	gw := newFakeGateway(t)
	until := metricsNow.Add(time.Hour)
	r := reportOf(metricsNow, false, nil,
		Entry{Namespace: "a", Name: "a", State: StateWaiting, HeldUntil: &until},
		Entry{Namespace: "b", Name: "b", State: StateWaiting, HeldUntil: &until, HoldIgnored: "x"},
		Entry{Namespace: "c", Name: "c", State: StateWaiting, HoldIgnored: "y"},
		Entry{Namespace: "d", Name: "d", State: StateWaiting},
	)
	if err := PushMetrics(t.Context(), gw.URL, "", r, true, nil); err != nil {
		t.Fatal(err)
	}
	fams := gw.Requests()[0].Families
	wantSeries(t, fams, series{"nsman_holds", map[string]string{"result": "held"}, 2}, series{"nsman_holds", map[string]string{"result": "ignored"}, 2})
}

// nsman_notifications carries the sweep's counts, zeros when it sent none.
func TestPushMetricsCountsNotifications(t *testing.T) {
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, false, nil)
	r.Summary.Notifications = map[string]int{"sent": 3, "failed": 1}
	if err := PushMetrics(t.Context(), gw.URL, "", r, true, nil); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, gw.Requests()[0].Families, series{"nsman_notifications", map[string]string{"result": "sent"}, 3}, series{"nsman_notifications", map[string]string{"result": "failed"}, 1})
	r.Summary.Notifications = nil
	if err := PushMetrics(t.Context(), gw.URL, "", r, true, nil); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, gw.Requests()[1].Families, series{"nsman_notifications", map[string]string{"result": "sent"}, 0})
}
