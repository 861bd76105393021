package metrics

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// fakeGateway is a Pushgateway's push API on loopback: it decodes what is
// pushed and keeps each group the way the Pushgateway does, a PUT replacing
// the whole group and a POST only the metric families it carries. It
// serves the groups as the Pushgateway's GET /api/v1/metrics does.
type fakeGateway struct {
	URL string

	mu         sync.Mutex
	status     int
	readStatus int                                     // of GET /api/v1/metrics
	readBody   string                                  // when not empty, GET /api/v1/metrics's answer
	readHang   bool                                    // GET /api/v1/metrics answers only when the request is cancelled
	readOthers int                                     // groups of other jobs GET /api/v1/metrics lists first, made up as it writes them
	readBytes  int64                                   // of the last answer of GET /api/v1/metrics
	reads      int                                     // GETs of /api/v1/metrics
	requests   []pushRequest                           // pushes
	groups     map[string]map[string]*dto.MetricFamily // by URL path, then by name
}

// pushRequest is one push the fakeGateway got.
type pushRequest struct {
	Method, Path, ContentType string
	Families                  map[string]*dto.MetricFamily
}

func newFakeGateway(t *testing.T) *fakeGateway {
	g := &fakeGateway{status: http.StatusOK, readStatus: http.StatusOK, groups: map[string]map[string]*dto.MetricFamily{}}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func (g *fakeGateway) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet && req.URL.Path == "/api/v1/metrics" {
		g.serveRead(w, req)
		return
	}
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
	group := groupOf(req.URL.Path)
	switch req.Method {
	case http.MethodPut:
		g.groups[group] = maps.Clone(fams)
	case http.MethodPost:
		if g.groups[group] == nil {
			g.groups[group] = map[string]*dto.MetricFamily{}
		}
		maps.Copy(g.groups[group], fams)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// groupOf is the group a push's path names, as the Pushgateway takes it
// whatever the order of its grouping labels (push.Pusher orders them as a
// map does): /metrics/job/<job>, then the other labels sorted by name.
func groupOf(path string) string {
	kv := strings.Split(strings.TrimPrefix(path, "/metrics/job/"), "/")
	var pairs []string
	for i := 1; i+1 < len(kv); i += 2 {
		pairs = append(pairs, kv[i]+"/"+kv[i+1])
	}
	slices.Sort(pairs)
	return strings.Join(append([]string{"/metrics/job/" + kv[0]}, pairs...), "/")
}

// serveRead answers GET /api/v1/metrics as the Pushgateway does: a list of
// the groups, each with its grouping labels and its metric families, every
// series with the grouping labels and instance="", values as strings.
func (g *fakeGateway) serveRead(w http.ResponseWriter, req *http.Request) {
	g.mu.Lock()
	g.reads++
	status, body, hang, others := g.readStatus, g.readBody, g.readHang, g.readOthers
	var data []map[string]any
	for path, fams := range g.groups {
		kv := strings.Split(strings.TrimPrefix(path, "/metrics/"), "/")
		labels := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			labels[kv[i]] = kv[i+1]
		}
		group := map[string]any{"labels": labels, "last_push_successful": true}
		for name, mf := range fams {
			var metrics []map[string]any
			for _, m := range mf.GetMetric() {
				ml := map[string]string{"instance": ""}
				maps.Copy(ml, labels)
				for _, l := range m.GetLabel() {
					ml[l.GetName()] = l.GetValue()
				}
				v := m.GetGauge().GetValue()
				if m.Counter != nil {
					v = m.GetCounter().GetValue()
				}
				metrics = append(metrics, map[string]any{"labels": ml, "value": fmt.Sprint(v)})
			}
			group[name] = map[string]any{"time_stamp": metricsNow, "type": mf.GetType().String(), "help": mf.GetHelp(), "metrics": metrics}
		}
		data = append(data, group)
	}
	g.mu.Unlock()
	if hang {
		<-req.Context().Done()
		return
	}
	if status != http.StatusOK {
		http.Error(w, "refused", status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	cw := &countingWriter{w: w}
	defer func() {
		g.mu.Lock()
		g.readBytes = cw.n
		g.mu.Unlock()
	}()
	if body != "" {
		io.WriteString(cw, body)
		return
	}
	if others == 0 {
		json.NewEncoder(cw).Encode(map[string]any{"status": "success", "data": data})
		return
	}
	// The others first, each written as it is made up, none kept.
	bw := bufio.NewWriterSize(cw, 32<<10)
	bw.WriteString(`{"status":"success","data":[`)
	var buf []byte
	for i := range others {
		if i > 0 {
			bw.WriteByte(',')
		}
		buf = otherGroup(buf[:0], i)
		if _, err := bw.Write(buf); err != nil {
			return // the client went away
		}
	}
	for _, group := range data {
		b, err := json.Marshal(group)
		if err != nil {
			panic(err)
		}
		bw.WriteByte(',')
		bw.Write(b)
	}
	bw.WriteString("]}\n")
	bw.Flush()
}

// otherGroup appends to buf the i-th group of another job that
// fakeGateway.readOthers lists, about 1.4 KiB of JSON. One in 1,000 is a
// near miss, a group of job nsman but with other labels, or of job
// nsman-preview, with a nsman_reclaimed_cpu_cores_total of 1e6.
func otherGroup(buf []byte, i int) []byte {
	job, instance := "batch-"+strconv.Itoa(i), "pod-"+strconv.Itoa(i)
	labels := `"instance":"` + instance + `","job":"` + job + `"`
	if i%1000 == 0 {
		labels = [...]string{`"job":"nsman","shard":"3"`, `"instance":"","job":"nsman"`, `"job":"nsman-preview"`}[i/1000%3]
	}
	buf = append(buf, `{"labels":{`...)
	buf = append(buf, labels...)
	buf = append(buf, `},"last_push_successful":true`...)
	for _, name := range []string{"push_time_seconds", "push_failure_time_seconds", "batch_rows_processed", "batch_duration_seconds", "batch_last_success_timestamp_seconds"} {
		buf = append(buf, `,"`...)
		buf = append(buf, name...)
		buf = append(buf, `":{"time_stamp":"2026-03-01T09:30:15.5Z","type":"GAUGE","help":"A metric of a batch job that pushes its figures to the same Pushgateway as nsman.","metrics":[{"labels":{"instance":"`...)
		buf = append(buf, instance...)
		buf = append(buf, `","job":"`...)
		buf = append(buf, job...)
		buf = append(buf, `"},"value":"`...)
		buf = strconv.AppendFloat(buf, float64(i)*1.5, 'g', -1, 64)
		buf = append(buf, `"}]}`...)
	}
	if i%1000 == 0 {
		buf = append(buf, `,"nsman_reclaimed_cpu_cores_total":{"type":"COUNTER","metrics":[{"labels":{"action":"DELETE"},"value":"1e6"},{"labels":{"action":"SCALE_DOWN"},"value":"1e6"}]}`...)
	}
	return append(buf, '}')
}

// countingWriter counts the bytes written to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadBytes returns the size of the last answer of GET /api/v1/metrics.
func (g *fakeGateway) ReadBytes() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.readBytes
}

// Reads returns how many times the totals were read.
func (g *fakeGateway) Reads() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads
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
	return seriesValue(fams, name, dto.MetricType_GAUGE, labels)
}

// seriesValue returns the value of the series name{labels} of type typ in
// fams.
func seriesValue(fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, labels map[string]string) (float64, bool) {
	mf, ok := fams[name]
	if !ok || mf.GetType() != typ {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, labels) {
			if typ == dto.MetricType_COUNTER {
				return m.GetCounter().GetValue(), true
			}
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

func state(s report.State) map[string]string { return map[string]string{"state": string(s)} }
func method(m string) map[string]string      { return map[string]string{"method": m} }
func action(a, result string) map[string]string {
	return map[string]string{"action": a, "result": result}
}

// reportOf builds a Report of entries with the summary a sweep computes.
func reportOf(now time.Time, dryRun bool, requests map[string]int, entries ...report.Entry) report.Report {
	states := map[report.State]int{}
	for _, e := range entries {
		states[e.State]++
	}
	return report.Report{Version: report.ReportVersion, Entries: entries, Summary: report.Summary{
		Now: now, DryRun: dryRun, Managers: len(entries), States: states, Requests: requests, DurationSeconds: 1.25,
	}}
}

var metricsNow = time.Date(2026, 3, 1, 9, 30, 15, 500_000_000, time.UTC)

func TestPushMetricsOfASweep(t *testing.T) {
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, false, map[string]int{"get": 7, "patch": 5, "delete": 2, "post": 1},
		report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete},
		report.Entry{Name: "b", State: report.StateFired, Action: policy.ActionDelete},
		report.Entry{Name: "c", State: report.StateFired, Action: policy.ActionWebhook},
		report.Entry{Name: "d", State: report.StateFailed, Action: policy.ActionScaleDown},
		report.Entry{Name: "e", State: report.StateFailed}, // an API request failed before any action
		report.Entry{Name: "f", State: report.StateDeferred, Action: policy.ActionDelete},
		report.Entry{Name: "g", State: report.StateBusy, Action: policy.ActionDelete}, // another sweep acts
		report.Entry{Name: "h", State: report.StateWaiting},
		report.Entry{Name: "i", State: report.StateInvalid},
	)
	if err := PushMetrics(t.Context(), gw.URL, "", "", r, false, nil); err != nil {
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
		series{"nsman_managers", state(report.StateFired), 3},
		series{"nsman_managers", state(report.StateFailed), 2},
		series{"nsman_managers", state(report.StateDeferred), 1},
		series{"nsman_managers", state(report.StateBusy), 1},
		series{"nsman_managers", state(report.StateWaiting), 1},
		series{"nsman_managers", state(report.StateInvalid), 1},
		series{"nsman_managers", state(report.StatePlanned), 0},
		series{"nsman_managers", state(report.StateTargetMissing), 0},
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
	if n := len(req.Families["nsman_actions"].GetMetric()); n != 4*4 {
		t.Errorf("nsman_actions has %d series, want 16", n)
	}
	if _, ok := req.Families["nsman_last_success_timestamp_seconds"]; ok {
		t.Error("a failed sweep pushed nsman_last_success_timestamp_seconds")
	}
	names := slices.Sorted(maps.Keys(req.Families))
	want := []string{"nsman_actions", "nsman_api_requests", "nsman_dry_run", "nsman_holds", "nsman_managers", "nsman_namespaces_asleep", "nsman_namespaces_stuck", "nsman_namespaces_stuck_oldest_seconds", "nsman_notifications",
		"nsman_reclaimed_cpu_cores_total", "nsman_reclaimed_load_balancers_total", "nsman_reclaimed_memory_bytes_total", "nsman_reclaimed_storage_bytes_total", "nsman_sweep_duration_seconds",
		"nsman_traffic_queries", "nsman_traffic_unknown"}
	if !slices.Equal(names, want) {
		t.Errorf("pushed %q, want %q", names, want)
	}
}

func TestPushMetricsOfADryRun(t *testing.T) {
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, true, map[string]int{"get": 3},
		report.Entry{Name: "a", State: report.StatePlanned, Action: policy.ActionDelete},
		report.Entry{Name: "b", State: report.StatePlanned, Action: policy.ActionWebhook},
	)
	if err := PushMetrics(t.Context(), gw.URL, "nsman-preview", "", r, true, nil); err != nil {
		t.Fatal(err)
	}
	req := gw.Requests()[0]
	if req.Path != "/metrics/job/nsman-preview" {
		t.Errorf("pushed to %s, want the job nsman-preview", req.Path)
	}
	wantSeries(t, req.Families,
		series{"nsman_dry_run", nil, 1},
		series{"nsman_managers", state(report.StatePlanned), 2},
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
		r := reportOf(metricsNow, false, nil, report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete})
		r.Summary.Shard = &report.Shard{Index: i, Count: 2}
		if err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, req := range gw.Requests() {
		if want := fmt.Sprintf("/metrics/job/nsman/shard/%d", i); req.Path != want {
			t.Errorf("shard %d pushed to %s, want %s", i, req.Path, want)
		}
	}
}

// TestPushMetricsHasEveryState reads the State constants from report/report.go, so
// that a State added there without a nsman_managers series fails here.
func TestPushMetricsHasEveryState(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../report/report.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var states []report.State
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
					states = append(states, report.State(s))
				}
			}
		}
		return true
	})
	if len(states) < 10 {
		t.Fatalf("found only %d State constants in report.go: %q", len(states), states)
	}

	gw := newFakeGateway(t)
	if err := PushMetrics(t.Context(), gw.URL, "", "", reportOf(metricsNow, false, nil), true, nil); err != nil {
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
		report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete})
	if err := PushMetrics(t.Context(), gw.URL, "", "", ok, true, nil); err != nil {
		t.Fatal(err)
	}
	later := metricsNow.Add(10 * time.Minute)
	failed := reportOf(later, false, map[string]int{"get": 2, "patch": 2, "post": 1},
		report.Entry{Name: "b", State: report.StateFailed, Action: policy.ActionWebhook})
	if err := PushMetrics(t.Context(), gw.URL, "", "", failed, false, nil); err != nil {
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
		series{"nsman_managers", state(report.StateFired), 0},
		series{"nsman_managers", state(report.StateFailed), 1},
		series{"nsman_api_requests", method("delete"), 0},
		series{"nsman_api_requests", method("post"), 1},
	)

	// The next successful sweep moves the timestamp on.
	ok.Summary.Now = later.Add(10 * time.Minute)
	if err := PushMetrics(t.Context(), gw.URL, "", "", ok, true, nil); err != nil {
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
		err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "push metrics") || !strings.Contains(err.Error(), "400") {
			t.Fatalf("error %v, want one that says the push got a 400", err)
		}
		if errors.Is(err, ErrCountersLeftOut) {
			t.Errorf("error %v wraps ErrCountersLeftOut: nothing was pushed", err)
		}
	})
	// When the read fails too, the error is the push's: nothing was pushed.
	t.Run("refused, read failed", func(t *testing.T) {
		gw := newFakeGateway(t)
		gw.status = http.StatusBadRequest
		gw.readStatus = http.StatusNotFound
		err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil)
		if err == nil || !strings.Contains(err.Error(), "400") || errors.Is(err, ErrCountersLeftOut) {
			t.Fatalf("error %v, want the push's 400, not ErrCountersLeftOut", err)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		gw := newFakeGateway(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := PushMetrics(ctx, gw.URL, "", "", r, true, nil)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCountersLeftOut) {
			t.Fatalf("error %v, want context.Canceled, not ErrCountersLeftOut", err)
		}
		if n := len(gw.Requests()); n != 0 {
			t.Errorf("%d pushes with a cancelled context", n)
		}
	})
	t.Run("client is used", func(t *testing.T) {
		gw := newFakeGateway(t)
		transport := &usedTransport{}
		client := &http.Client{Transport: transport}
		if err := PushMetrics(t.Context(), gw.URL, "", "", r, true, client); err != nil {
			t.Fatal(err)
		}
		if !transport.used {
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
		report.Entry{Namespace: "a", Name: "a", State: report.StateWaiting, HeldUntil: &until},
		report.Entry{Namespace: "b", Name: "b", State: report.StateWaiting, HeldUntil: &until, HoldIgnored: "x"},
		report.Entry{Namespace: "c", Name: "c", State: report.StateWaiting, HoldIgnored: "y"},
		report.Entry{Namespace: "d", Name: "d", State: report.StateWaiting},
	)
	if err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil); err != nil {
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
	if err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, gw.Requests()[0].Families, series{"nsman_notifications", map[string]string{"result": "sent"}, 3}, series{"nsman_notifications", map[string]string{"result": "failed"}, 1})
	r.Summary.Notifications = nil
	if err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, gw.Requests()[1].Families, series{"nsman_notifications", map[string]string{"result": "sent"}, 0})
}

func reasonLabel(r string) map[string]string { return map[string]string{"reason": r} }

// stuckSince is a Stuck of namespace deleted d before metricsNow.
func stuckSince(d time.Duration, reasons ...string) *report.Stuck {
	st := &report.Stuck{Since: metricsNow.Add(-d)}
	for _, r := range reasons {
		st.Reasons = append(st.Reasons, report.StuckReason{Reason: r, Message: "held by " + r})
	}
	return st
}

// nsman_namespaces_stuck counts namespaces, not entries: a manager and a
// rule pair that name the same stuck namespace count it once, under each
// of its reasons.
func TestPushMetricsCountsStuckNamespaces(t *testing.T) {
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, false, nil,
		report.Entry{Namespace: "a", Name: "m", Target: "a", State: report.StateTargetTerminating, Stuck: stuckSince(2*time.Hour, report.StuckContentRemaining, report.StuckNamespaceFinalizers)},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "a", State: report.StateTargetTerminating, Stuck: stuckSince(2*time.Hour, report.StuckContentRemaining, report.StuckNamespaceFinalizers)},
		report.Entry{Namespace: "b", Name: "m", Target: "b", State: report.StateTargetTerminating, Stuck: stuckSince(30*time.Minute+500*time.Millisecond, report.StuckContentRemaining)},
		report.Entry{Namespace: "c", Name: "m", Target: "c", State: report.StateTargetTerminating}, // not stuck yet
	)
	mustPushAll(t, gw, r)
	fams := gw.Requests()[0].Families
	wantSeries(t, fams,
		series{"nsman_namespaces_stuck", reasonLabel(report.StuckContentRemaining), 2},
		series{"nsman_namespaces_stuck", reasonLabel(report.StuckNamespaceFinalizers), 1},
		series{"nsman_namespaces_stuck_oldest_seconds", nil, 7200},
	)
	for _, rs := range report.StuckReasons {
		if rs != report.StuckContentRemaining && rs != report.StuckNamespaceFinalizers {
			wantSeries(t, fams, series{"nsman_namespaces_stuck", reasonLabel(rs), 0})
		}
	}
	if n := len(fams["nsman_namespaces_stuck"].GetMetric()); n != len(report.StuckReasons) {
		t.Errorf("nsman_namespaces_stuck has %d series, want one per reason (%d)", n, len(report.StuckReasons))
	}

	// The next sweep finds none stuck: every series is pushed, at 0.
	mustPushAll(t, gw, reportOf(metricsNow.Add(time.Hour), false, nil, report.Entry{Namespace: "c", Name: "m", Target: "c", State: report.StateWaiting}))
	group := gw.Group("/metrics/job/nsman")
	wantSeries(t, group, series{"nsman_namespaces_stuck_oldest_seconds", nil, 0})
	for _, rs := range report.StuckReasons {
		wantSeries(t, group, series{"nsman_namespaces_stuck", reasonLabel(rs), 0})
	}
}

// nsman_namespaces_asleep counts the namespaces a sweep leaves asleep,
// each once: asleep, or put to sleep in it; not woken, nor planned in a
// dry run.
func TestPushMetricsCountsAsleepNamespaces(t *testing.T) {
	gw := newFakeGateway(t)
	mustPushAll(t, gw, reportOf(metricsNow, false, nil,
		report.Entry{Namespace: "a", Name: "m", Target: "a", State: report.StateAsleep},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "a", State: report.StateAsleep},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "b", State: report.StateFired, Action: policy.ActionSleep},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "c", State: report.StateFired, Action: policy.ActionSleep, Woke: true},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "d", State: report.StatePlanned, Action: policy.ActionSleep},
		report.Entry{Namespace: "e", Name: "m", Target: "e", State: report.StateFired, Action: policy.ActionScaleDown},
	))
	wantSeries(t, gw.Requests()[0].Families, series{"nsman_namespaces_asleep", nil, 2})
}

// nsman_traffic_queries counts the sweep's traffic queries by result,
// both present; nsman_traffic_unknown the entries that wait for an answer.
func TestPushMetricsCountsTraffic(t *testing.T) {
	gw := newFakeGateway(t)
	requests := 3.0
	r := reportOf(metricsNow, false, nil,
		report.Entry{Namespace: "a", Name: "m", Target: "a", State: report.StateWaiting, Traffic: &report.Traffic{Source: "preset istio", Unknown: "connection refused"}},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "b", State: report.StateWaiting, Traffic: &report.Traffic{Source: "preset istio", Unknown: "connection refused"}},
		report.Entry{Namespace: "rules", Name: "r", Rule: true, Target: "c", State: report.StateWaiting, Traffic: &report.Traffic{Source: "a query", Requests: &requests}},
	)
	r.Summary.TrafficQueries = map[string]int{"answered": 1, "unanswered": 1}
	mustPushAll(t, gw, r)
	families := gw.Requests()[0].Families
	wantSeries(t, families, series{"nsman_traffic_unknown", nil, 2})
	wantSeries(t, families, series{"nsman_traffic_queries", map[string]string{"result": "answered"}, 1})
	wantSeries(t, families, series{"nsman_traffic_queries", map[string]string{"result": "unanswered"}, 1})
}

// mustPushAll pushes r's metrics to gw, and fails unless the counters were
// pushed too.
func mustPushAll(t *testing.T, gw *fakeGateway, r report.Report) {
	t.Helper()
	if err := PushMetrics(t.Context(), gw.URL, "", "", r, true, nil); err != nil {
		t.Fatalf("PushMetrics: %v", err)
	}
}

// counterValue returns the value of the counter series name{labels} in fams.
func counterValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	return seriesValue(fams, name, dto.MetricType_COUNTER, labels)
}

// pushedTotals is the value of every nsman_reclaimed_* counter of one action.
type pushedTotals struct{ cpu, memory, storage, lbs float64 }

// wantPushedTotals fails unless fams has every nsman_reclaimed_* counter,
// with a series for each of DELETE, SCALE_DOWN and SLEEP alone, at the
// values of want.
func wantPushedTotals(t *testing.T, fams map[string]*dto.MetricFamily, want map[string]pushedTotals) {
	t.Helper()
	for _, a := range []string{policy.ActionDelete, policy.ActionScaleDown, policy.ActionSleep} {
		w := want[a]
		for name, v := range map[string]float64{"nsman_reclaimed_cpu_cores_total": w.cpu, "nsman_reclaimed_memory_bytes_total": w.memory,
			"nsman_reclaimed_storage_bytes_total": w.storage, "nsman_reclaimed_load_balancers_total": w.lbs} {
			got, ok := counterValue(fams, name, map[string]string{"action": a})
			switch {
			case !ok:
				t.Errorf("no counter %s{action=%s}", name, a)
			case math.Abs(got-v) > 1e-9*max(1, v):
				t.Errorf("%s{action=%s} = %v, want %v", name, a, got, v)
			}
			if n := len(fams[name].GetMetric()); ok && n != 3 {
				t.Errorf("%s has %d series, want DELETE, SCALE_DOWN and SLEEP", name, n)
			}
		}
	}
}

// wantNoTotals fails when fams has a nsman_reclaimed_* family.
func wantNoTotals(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for name := range fams {
		if strings.HasPrefix(name, "nsman_reclaimed_") {
			t.Errorf("%s pushed", name)
		}
	}
}

func freeing(cpu, memory, storage string, lbs int) *report.Reclaimed {
	return &report.Reclaimed{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory), Storage: resource.MustParse(storage), LoadBalancers: lbs}
}

// The nsman_reclaimed_* counters start from 0 and add, push after push,
// what every entry with a Reclaimed freed, whatever its state (a failed one
// freed what it did before failing), but for planned ones and dry runs.
func TestPushMetricsReclaimedTotals(t *testing.T) {
	gw := newFakeGateway(t)
	mustPushAll(t, gw, reportOf(metricsNow, false, nil, report.Entry{Name: "w", State: report.StateWaiting}))
	wantPushedTotals(t, gw.Requests()[0].Families, nil) // the first sweep ever: 0

	first := reportOf(metricsNow, false, nil,
		report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing("250m", "1Gi", "10Gi", 1)},
		report.Entry{Name: "b", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing("1", "512Mi", "0", 0)},
		report.Entry{Name: "c", State: report.StateFired, Action: policy.ActionScaleDown, Reclaimed: freeing("1500m", "2G", "0", 0)},
		report.Entry{Name: "d", State: report.StatePlanned, Action: policy.ActionDelete, Reclaimed: freeing("100", "1Ti", "1Ti", 100)}, // freed nothing
		// A SCALE_DOWN that failed part-way, having scaled one workload down.
		report.Entry{Name: "e", State: report.StateFailed, Action: policy.ActionScaleDown, Reclaimed: freeing("500m", "1G", "0", 0)},
		// A DELETE whose outcome could not be recorded.
		report.Entry{Name: "e2", State: report.StateFailed, Action: policy.ActionDelete, Reclaimed: freeing("1", "0", "5Gi", 0)},
		report.Entry{Name: "f", State: report.StateDeferred, Action: policy.ActionScaleDown},
		report.Entry{Name: "f2", State: report.StateFailed, Action: policy.ActionDelete},                                               // failed, nothing freed
		report.Entry{Name: "f3", State: report.StateFired, Action: policy.ActionWebhook, Reclaimed: freeing("100", "1Ti", "1Ti", 100)}, // no such series
		report.Entry{Name: "g", State: report.StateFired, Action: policy.ActionDelete},                                                 // nothing to free
		report.Entry{Name: "s", State: report.StateFired, Action: policy.ActionSleep, Reclaimed: freeing("750m", "1G", "0", 0)},
	)
	mustPushAll(t, gw, first)
	afterFirst := map[string]pushedTotals{
		policy.ActionDelete:    {cpu: 2.25, memory: 1<<30 + 512<<20, storage: 15 << 30, lbs: 1},
		policy.ActionScaleDown: {cpu: 2, memory: 3e9},
		policy.ActionSleep:     {cpu: 0.75, memory: 1e9},
	}
	wantPushedTotals(t, gw.Requests()[1].Families, afterFirst)

	second := reportOf(metricsNow.Add(time.Hour), false, nil,
		report.Entry{Name: "h", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing("500m", "256Mi", "1Gi", 2)},
		report.Entry{Name: "i", State: report.StateFired, Action: policy.ActionScaleDown, Reclaimed: freeing("2", "1G", "0", 0)},
	)
	mustPushAll(t, gw, second)
	afterSecond := map[string]pushedTotals{
		policy.ActionDelete:    {cpu: 2.75, memory: 1<<30 + 768<<20, storage: 16 << 30, lbs: 3},
		policy.ActionScaleDown: {cpu: 4, memory: 4e9},
		policy.ActionSleep:     {cpu: 0.75, memory: 1e9},
	}
	wantPushedTotals(t, gw.Requests()[2].Families, afterSecond)
	wantPushedTotals(t, gw.Group("/metrics/job/nsman"), afterSecond)
	if n, want := gw.Reads(), 3; n != want {
		t.Errorf("%d reads of the totals for %d pushes, want one each", n, want)
	}

	// A dry run neither reads nor pushes the totals: its planned actions
	// freed nothing, and the totals stay.
	dry := reportOf(metricsNow.Add(2*time.Hour), true, nil,
		report.Entry{Name: "j", State: report.StatePlanned, Action: policy.ActionDelete, Reclaimed: freeing("4", "4Gi", "4Gi", 4)})
	mustPushAll(t, gw, dry)
	wantNoTotals(t, gw.Requests()[3].Families)
	if n := gw.Reads(); n != 3 {
		t.Errorf("a dry run read the totals")
	}
	wantPushedTotals(t, gw.Group("/metrics/job/nsman"), afterSecond)
	wantSeries(t, gw.Group("/metrics/job/nsman"), series{"nsman_dry_run", nil, 1})
}

// Each shard keeps totals of its own, in its own group, apart from those
// of an unsharded sweep of the same job.
func TestPushMetricsReclaimedTotalsOfShards(t *testing.T) {
	gw := newFakeGateway(t)
	for range 2 {
		mustPushAll(t, gw, reportOf(metricsNow, false, nil,
			report.Entry{Name: "x", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing("8", "0", "0", 8)}))
		for i := range 2 {
			r := reportOf(metricsNow, false, nil,
				report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing(strconv.Itoa(i+1), "0", "0", 0)})
			r.Summary.Shard = &report.Shard{Index: i, Count: 2}
			mustPushAll(t, gw, r)
		}
	}
	wantPushedTotals(t, gw.Group("/metrics/job/nsman"), map[string]pushedTotals{policy.ActionDelete: {cpu: 16, lbs: 16}})
	wantPushedTotals(t, gw.Group("/metrics/job/nsman/shard/0"), map[string]pushedTotals{policy.ActionDelete: {cpu: 2}})
	wantPushedTotals(t, gw.Group("/metrics/job/nsman/shard/1"), map[string]pushedTotals{policy.ActionDelete: {cpu: 4}})
}

// The clusters of a fleet push to one Pushgateway side by side, each to a
// group of its own (and each shard of one within it), each keeping totals
// of its own, apart from those of a sweep that names no cluster.
func TestPushMetricsOfClusters(t *testing.T) {
	gw := newFakeGateway(t)
	push := func(cluster, cpu string, shard *report.Shard) {
		t.Helper()
		r := reportOf(metricsNow, false, nil,
			report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing(cpu, "0", "0", 0)})
		r.Summary.Shard = shard
		if err := PushMetrics(t.Context(), gw.URL, "", cluster, r, true, nil); err != nil {
			t.Fatalf("PushMetrics of cluster %q: %v", cluster, err)
		}
	}
	for range 2 {
		push("", "8", nil)
		push("east", "1", nil)
		push("west", "2", &report.Shard{Index: 1, Count: 2})
	}
	var paths []string
	for _, req := range gw.Requests() {
		paths = append(paths, groupOf(req.Path))
	}
	want := []string{"/metrics/job/nsman", "/metrics/job/nsman/cluster/east", "/metrics/job/nsman/cluster/west/shard/1"}
	if !slices.Equal(paths[:3], want) {
		t.Errorf("pushed to %q, want %q", paths[:3], want)
	}
	wantPushedTotals(t, gw.Group(want[0]), map[string]pushedTotals{policy.ActionDelete: {cpu: 16}})
	wantPushedTotals(t, gw.Group(want[1]), map[string]pushedTotals{policy.ActionDelete: {cpu: 2}})
	wantPushedTotals(t, gw.Group(want[2]), map[string]pushedTotals{policy.ActionDelete: {cpu: 4}})
}

// When the totals cannot be read, the gauges are pushed without the
// counters, which keep their totals, and PushMetrics says so.
func TestPushMetricsReadFails(t *testing.T) {
	r := reportOf(metricsNow, false, nil,
		report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing("1", "1Gi", "1Gi", 1)})
	before := map[string]pushedTotals{policy.ActionDelete: {cpu: 1, memory: 1 << 30, storage: 1 << 30, lbs: 1}}
	for _, tc := range []struct {
		name  string
		setup func(*fakeGateway)
		want  string
	}{
		{"refused", func(g *fakeGateway) { g.readStatus = http.StatusNotFound }, "404"},
		{"not JSON", func(g *fakeGateway) { g.readBody = "<html>" }, "invalid character"},
		{"not success", func(g *fakeGateway) { g.readBody = `{"status":"error","error":"x"}` }, "not success"},
		{"no counter's value", func(g *fakeGateway) {
			g.readBody = `{"status":"success","data":[{"labels":{"job":"nsman"},"nsman_reclaimed_cpu_cores_total":{"type":"COUNTER","metrics":[{"labels":{"action":"DELETE"},"value":"-1"}]}}]}`
		}, `"-1", not a counter's value`},
		{"no answer in time", func(g *fakeGateway) { g.readHang = true }, "deadline exceeded"},
		{"a group over 1 MiB", func(g *fakeGateway) {
			g.readBody = `{"status":"success","data":[{"labels":{"job":"other"},"x":"` + strings.Repeat("x", 1<<20) + `"},{"labels":{"job":"nsman"}}]}`
		}, "over 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newFakeGateway(t)
			mustPushAll(t, gw, r)
			tc.setup(gw)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			later := r
			later.Summary.Now = metricsNow.Add(time.Hour)
			err := PushMetrics(ctx, gw.URL, "", "", later, true, nil)
			if !errors.Is(err, ErrCountersLeftOut) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one wrapping ErrCountersLeftOut saying %q", err, tc.want)
			}
			reqs := gw.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d pushes, want 2", len(reqs))
			}
			wantNoTotals(t, reqs[1].Families)
			wantSeries(t, reqs[1].Families, series{"nsman_managers", state(report.StateFired), 1},
				series{"nsman_last_success_timestamp_seconds", nil, float64(later.Summary.Now.UnixMilli()) / 1e3})
			wantPushedTotals(t, gw.Group("/metrics/job/nsman"), before)
		})
	}
}

// TestPushMetricsReadsALargeGateway reads the totals from a Pushgateway
// that holds 50,000 groups of other jobs, about 70 MB of JSON (over the
// 64 MiB that used to be the most PushMetrics read), listed before nsman's:
// the read finds the group, and the live heap barely grows (the answer
// decoded whole took about twice its size).
func TestPushMetricsReadsALargeGateway(t *testing.T) {
	const others = 50_000
	gw := newFakeGateway(t)
	r := reportOf(metricsNow, false, nil,
		report.Entry{Name: "a", State: report.StateFired, Action: policy.ActionDelete, Reclaimed: freeing("1", "1Gi", "1Gi", 1)})
	mustPushAll(t, gw, r)
	gw.mu.Lock()
	gw.readOthers = others
	gw.mu.Unlock()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := sampleHeap()
	start := time.Now()
	mustPushAll(t, gw, r)
	took := time.Since(start)
	peakLive, peakObjects := peak()
	runtime.ReadMemStats(&after)

	n := gw.ReadBytes()
	t.Logf("read %d groups, %.1f MB, in %v", others+1, float64(n)/1e6, took.Round(time.Millisecond))
	if n <= 64<<20 {
		t.Errorf("the answer was %d bytes, want over 64 MiB", n)
	}
	// The near misses' totals of 1e6 are not the group's.
	wantPushedTotals(t, gw.Group("/metrics/job/nsman"), map[string]pushedTotals{policy.ActionDelete: {cpu: 2, memory: 2 << 30, storage: 2 << 30, lbs: 2}})

	// The live heap as of each GC (the whole test process's: no test of
	// the package runs in parallel), sampled; a missed peak only makes the
	// figure lower.
	grown := int64(peakLive) - int64(before.HeapAlloc)
	t.Logf("heap: %.1f MiB live before; during the read, up to %.1f MiB live (%+.1f MiB) and %.1f MiB of objects with garbage; %.0f MiB allocated in all, %d GCs",
		mib(before.HeapAlloc), mib(peakLive), float64(grown)/(1<<20), mib(peakObjects), mib(after.TotalAlloc-before.TotalAlloc), after.NumGC-before.NumGC)
	if grown > 8<<20 {
		t.Errorf("the live heap grew by %.1f MiB during the read, want a few MiB at most", float64(grown)/(1<<20))
	}
}

// sampleHeap samples, until the function it returns is called, the live
// heap as of the last GC and the heap's objects (live or not yet
// collected), and that function returns the highest of each.
func sampleHeap() (peak func() (live, objects uint64)) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	stop, done := make(chan struct{}), make(chan [2]uint64)
	go func() {
		var top [2]uint64
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			for i := range s {
				if s[i].Value.Kind() == metrics.KindUint64 {
					top[i] = max(top[i], s[i].Value.Uint64())
				}
			}
			select {
			case <-stop:
				done <- top
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(stop)
		top := <-done
		return top[0], top[1]
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// decodeTotals reads the answer as a stream, in whatever order its keys
// come, keeping only the group whose labels are exactly the grouping.
func TestDecodeTotals(t *testing.T) {
	grouping := map[string]string{"job": "nsman"}
	const match = `{"labels":{"job":"nsman"},"last_push_successful":true,"nsman_reclaimed_cpu_cores_total":{"type":"COUNTER","metrics":[{"labels":{"action":"DELETE","instance":"","job":"nsman"},"value":"2.5"}]}}`
	const other = `{"labels":{"job":"nsman","shard":"0"},"nsman_reclaimed_cpu_cores_total":{"type":"COUNTER","metrics":[{"labels":{"action":"DELETE"},"value":"99"}]}}`
	found := map[string]map[string]float64{"nsman_reclaimed_cpu_cores_total": {policy.ActionDelete: 2.5}}
	none := map[string]map[string]float64{}
	for _, tc := range []struct {
		name, body string
		want       map[string]map[string]float64
		err        string
	}{
		{"status first", `{"status":"success","data":[` + other + `,` + match + `]}`, found, ""},
		{"status last", `{"data":[` + match + `,` + other + `],"status":"success"}`, found, ""},
		{"other keys", `{"warnings":[{"x":[1,2,{}]}],"status":"success","extra":null,"data":[` + match + `]}`, found, ""},
		{"no such group", `{"status":"success","data":[` + other + `,{"last_push_successful":true}]}`, none, ""},
		{"no group", `{"status":"success","data":[]}`, none, ""},
		{"data null", `{"status":"success","data":null}`, none, ""},
		{"no status", `{"data":[` + match + `]}`, nil, `status "", not success`},
		{"error status last", `{"data":[` + match + `],"status":"error"}`, nil, `status "error", not success`},
		{"data no list", `{"status":"success","data":{}}`, nil, "not a list of groups"},
		{"no object", `[]`, nil, "where { was expected"},
		{"cut short", `{"status":"success","data":[` + other, nil, "unexpected EOF"},
		{"labels no strings", `{"status":"success","data":[{"labels":{"job":1}}]}`, nil, "the labels of a group"},
		{"a value over 1 MiB", `{"status":"success","x":"` + strings.Repeat("x", 1<<20) + `","data":[` + match + `]}`, nil, "over 1048576 bytes"},
		{"a group of just under 1 MiB", `{"status":"success","data":[{"x":"` + strings.Repeat("x", 1<<20-100) + `"},` + match + `]}`, found, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTotals(strings.NewReader(tc.body), grouping)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, tc.want, maps.Equal) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	// Once it has the status and the group, it reads no further.
	body := io.MultiReader(strings.NewReader(`{"status":"success","data":[`+other+`,`+match), iotest.ErrReader(errors.New("read past the group")))
	got, err := decodeTotals(body, grouping)
	if err != nil || !maps.EqualFunc(got, found, maps.Equal) {
		t.Errorf("got %v, %v; want %v", got, err, found)
	}
	// A value over 1 MiB fails with errTotalsValueTooLarge, whose reading
	// stops there.
	var big strings.Builder
	big.WriteString(`{"status":"success","data":[{"x":"`)
	for range 64 {
		big.WriteString(strings.Repeat("x", 1<<20))
	}
	_, err = decodeTotals(strings.NewReader(big.String()), grouping)
	if !errors.Is(err, errTotalsValueTooLarge) {
		t.Errorf("error %v, want errTotalsValueTooLarge", err)
	}
}

// What counts in the nsman_reclaimed_* counters: every entry whose
// Reclaimed is set, but for planned ones and any of a dry run.
func TestCountsReclaimed(t *testing.T) {
	freed := freeing("1", "0", "0", 0)
	for _, tc := range []struct {
		e      report.Entry
		dryRun bool
		want   bool
	}{
		{report.Entry{State: report.StateFired, Reclaimed: freed}, false, true},
		{report.Entry{State: report.StateFailed, Reclaimed: freed}, false, true},
		{report.Entry{State: report.StateDeactivated, Reclaimed: freed}, false, true},
		{report.Entry{State: report.StateFired}, false, false},
		{report.Entry{State: report.StatePlanned, Reclaimed: freed}, false, false},
		{report.Entry{State: report.StateFired, Reclaimed: freed}, true, false},
		{report.Entry{State: report.StateFailed, Reclaimed: freed}, true, false},
	} {
		r := reportOf(metricsNow, tc.dryRun, nil, tc.e)
		if got := countsReclaimed(r, tc.e); got != tc.want {
			t.Errorf("countsReclaimed of a %s entry with Reclaimed %v, dry run %v: %v, want %v", tc.e.State, tc.e.Reclaimed != nil, tc.dryRun, got, tc.want)
		}
	}
}

// usedTransport says whether a request went through it.
type usedTransport struct{ used bool }

func (u *usedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u.used = true
	return http.DefaultTransport.RoundTrip(req)
}
