package metrics

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// DefaultMetricsJob is the Pushgateway job that PushMetrics groups a sweep's
// metrics under when it is given none.
const DefaultMetricsJob = "nsman"

// metricStates lists every State, so that nsman_managers has a series for
// each one, 0 when no manager is in it: dashboards and alerts see a zero
// rather than no data.
var metricStates = []report.State{
	report.StateDeactivated, report.StateInvalid, report.StateForbidden, report.StateTargetMissing, report.StateTargetTerminating,
	report.StateWaiting, report.StatePlanned, report.StateFired, report.StateFailed, report.StateDeferred, report.StateBusy, report.StateDone, report.StateGoverned, report.StateAsleep,
}

// metricActions are the action types nsman_actions always has series for.
var metricActions = policy.ActionTypes()

// actionResults are the values of nsman_actions's result label: an
// action's Result, or planned (dry run) or deferred (over the cap, or a
// WEBHOOK deferred or backing off).
var actionResults = []string{report.ResultSucceeded, report.ResultFailed, string(report.StatePlanned), string(report.StateDeferred)}

// metricMethods are the HTTP methods nsman_api_requests always has series for,
// so that the metric is in every push (see PushMetrics) and reads 0 rather
// than missing when a sweep made no such request.
var metricMethods = []string{"get", "post", "put", "patch", "delete"}

// reclaimedActions are the action types the nsman_reclaimed_* counters
// always have series for: those that free resources.
var reclaimedActions = slices.DeleteFunc(policy.ActionTypes(), func(typ string) bool { return !policy.ActionKindOf(typ).Reclaims() })

// reclaimedCounters are the counter families that total, over sweeps, what
// actions freed (Entry.Reclaimed; see countsReclaimed), each with the
// amount of one entry.
var reclaimedCounters = []struct {
	name, help string
	amount     func(*report.Reclaimed) float64
}{
	{"nsman_reclaimed_cpu_cores_total", "CPU cores requested by the pods that nsman actions removed, by action type, summed over nsman sweeps.",
		func(r *report.Reclaimed) float64 { return r.CPU.AsApproximateFloat64() }},
	{"nsman_reclaimed_memory_bytes_total", "Bytes of memory requested by the pods that nsman actions removed, by action type, summed over nsman sweeps.",
		func(r *report.Reclaimed) float64 { return r.Memory.AsApproximateFloat64() }},
	{"nsman_reclaimed_storage_bytes_total", "Bytes of storage requested by the PersistentVolumeClaims that nsman actions removed, by action type, summed over nsman sweeps.",
		func(r *report.Reclaimed) float64 { return r.Storage.AsApproximateFloat64() }},
	{"nsman_reclaimed_load_balancers_total", "Services of type LoadBalancer that nsman actions removed, by action type, summed over nsman sweeps.",
		func(r *report.Reclaimed) float64 { return float64(r.LoadBalancers) }},
}

// ErrCountersLeftOut is wrapped by the error PushMetrics returns when the
// push carried the gauges but not the nsman_reclaimed_* counters, whose
// totals stay as they were.
var ErrCountersLeftOut = errors.New("nsman_reclaimed_* counters left out of the push; the Pushgateway keeps their previous totals, and this sweep's amounts are not counted")

// totalsPath is the Pushgateway's HTTP API endpoint that lists every group
// with its metrics (Pushgateway 0.10 and later).
const totalsPath = "/api/v1/metrics"

// maxTotalsValue bounds each value of the answer of totalsPath that
// readTotals decodes whole: a group with all its metric families (one of
// nsman's is a few KiB), or the value of a key other than data. The answer
// itself, which lists every group the Pushgateway holds, is read as a
// stream and has no bound.
const maxTotalsValue = 1 << 20

// maxTotalsDrain is how much of what is left of an answer of totalsPath
// readTotals reads, to reuse the connection for the push; with more left,
// the connection is closed instead.
const maxTotalsDrain = 64 << 10

// PushMetrics pushes the metrics of the sweep r to the Pushgateway at url
// (scheme://host:port, as push.New takes it), grouped under job
// (DefaultMetricsJob when empty), cluster=<cluster> unless cluster is
// empty, and, for a sharded sweep, shard=<index>:
// gauges of this one sweep (sweepGauges), and the nsman_reclaimed_*
// counters, totals over sweeps. Only when lastSuccess (normally
// !r.Failed()) is nsman_last_success_timestamp_seconds pushed, set to
// r.Summary.Now. client makes the requests (http.DefaultClient when nil);
// ctx bounds them.
//
// The push is an Add (HTTP POST), not a Push (PUT). A PUT replaces the whole
// group, so a failed sweep, which must not claim success, would erase the
// previous success timestamp and with it the "no successful sweep for N
// hours" alert that the timestamp exists for. A POST replaces only the metric
// families it carries: every gauge family but the success timestamp is in
// every push (their vectors are pre-filled with zeros), so each push still
// replaces all of the previous sweep's values, including series that are gone
// now, while a failed sweep leaves the timestamp of the last success as it
// was. One group and one request also keep the two consistent: there is no
// separate success group to fall out of step or to carry an extra label.
//
// nsman is a process per sweep, so the counters' totals live in the
// Pushgateway: before pushing, PushMetrics reads the group's current totals
// (GET /api/v1/metrics, the Pushgateway's JSON API, the group whose labels
// are exactly job, cluster and shard), adds what this sweep's DELETE and SCALE_DOWN
// actions freed, and pushes the sums, every series (action DELETE and
// SCALE_DOWN) in the same POST; a family the group does not have yet
// starts from 0. What an action freed is its entry's Reclaimed, counted
// whenever it is set, whatever the entry's state: a SCALE_DOWN that failed
// part-way carries what it did scale down, and an action whose outcome
// could not be recorded still freed what it freed. Planned entries free
// nothing and count nowhere, and a dry run counts nothing at all.
//
// A push without the counter families leaves their totals as they were, so
// that they never go back nor count twice: a dry run pushes none, and
// neither does a sweep whose read fails (an error, an answer that does not
// parse, a group or other value of the answer over 1 MiB, a total that is
// no counter's value, or, when ctx has a deadline, no answer within half
// of the time left, the other half being the push's). The answer lists
// every group of every job on the Pushgateway; it is decoded as a stream,
// a group at a time, and only the matching group's totals are kept, so
// that the memory the read takes does not grow with the Pushgateway's
// size. That read costs one request: a push is two requests, one (the
// POST) in a dry run.
//
// The error is nil when everything was pushed. When it wraps
// ErrCountersLeftOut (errors.Is(err, ErrCountersLeftOut)), the gauges were
// pushed but the counters were left out because the read failed (the error
// wraps the cause too): this sweep's reclaimed amounts are lost to the
// totals, which an alert sees flat meanwhile. The caller should log it as
// a warning (the metrics were pushed) and go on; nothing is to be retried,
// the next sweep reads and pushes again. Any other error means the push
// failed and nothing was pushed.
//
// The read and its push are not atomic: the Pushgateway is no distributed
// counter, and two sweeps of the same group pushing at once could lose one
// sweep's increment, each adding to the same total read before the other's
// push. Nothing guards against that here; it does not happen because the
// CronJob forbids concurrent runs, and each cluster and shard pushes to a
// group of its own.
func PushMetrics(ctx context.Context, url, job, cluster string, r report.Report, lastSuccess bool, client *http.Client) error {
	if job == "" {
		job = DefaultMetricsJob
	}
	if client == nil {
		client = http.DefaultClient
	}
	grouping := map[string]string{"job": job}
	if cluster != "" {
		// A grouping label, as shard is, not a constant one: the clusters of a fleet pushing to one Pushgateway each keep a group, and totals, of their own.
		grouping["cluster"] = cluster
	}
	if sh := r.Summary.Shard; sh != nil {
		// Each shard has a group of its own: in one, the shards would
		// overwrite each other's figures.
		grouping["shard"] = strconv.Itoa(sh.Index)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(sweepGauges(r)...)
	if lastSuccess {
		reg.MustRegister(gauge("nsman_last_success_timestamp_seconds", "Unix time of the last nsman sweep in which no manager failed.",
			float64(r.Summary.Now.UnixMilli())/1e3))
	}
	var countersErr error
	if !r.Summary.DryRun && ctx.Err() == nil {
		totals, err := readTotals(ctx, client, url, grouping)
		if err != nil {
			countersErr = fmt.Errorf("%w: read the totals from the pushgateway: %w", ErrCountersLeftOut, err)
		} else {
			reg.MustRegister(reclaimedTotals(totals, r)...)
		}
	}
	p := push.New(url, job).Gatherer(reg).Client(client)
	for _, name := range []string{"cluster", "shard"} {
		if v, ok := grouping[name]; ok {
			p = p.Grouping(name, v)
		}
	}
	if err := p.AddContext(ctx); err != nil {
		return fmt.Errorf("push metrics to the pushgateway: %w", err)
	}
	return countersErr
}

// readTotals reads from the Pushgateway at url the values of the
// reclaimedCounters in the group whose labels are grouping: by family
// name, then by action; none for a family (or a group) the Pushgateway
// does not have. When ctx has a deadline, it waits at most half the time
// left, so that the push has the other half.
func readTotals(ctx context.Context, client *http.Client, url string, grouping map[string]string) (map[string]map[string]float64, error) {
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
		defer cancel()
	}
	// As push.New takes url.
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+totalsPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() {
		io.CopyN(io.Discard, resp.Body, maxTotalsDrain) //nolint:errcheck // drained for the connection's reuse
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", totalsPath, resp.Status)
	}
	totals, err := decodeTotals(resp.Body, grouping)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", totalsPath, err)
	}
	return totals, nil
}

// errTotalsValueTooLarge is what decodeTotals fails with on a value over
// maxTotalsValue.
var errTotalsValueTooLarge = fmt.Errorf("a group or value of the answer is over %d bytes", maxTotalsValue)

// decodeTotals decodes from body an answer of totalsPath,
//
//	{"status": "success", "data": [{"labels": {"job": ..., ...},
//	"<family>": {"type": "COUNTER", "metrics": [{"labels": {...},
//	"value": "1.5"}]}, ...}, ...]}
//
// each element of data a group, and returns the totals of the group whose
// labels are grouping (see readTotals). It reads body as a stream, and
// decodes whole only a group at a time (or the value of another key), each
// up to maxTotalsValue, keeping nothing of the other groups. Once it has
// both the status and the group, it reads no further. Hand-written over
// json.Decoder's tokens for a measured reason: decoded whole, 68.5 MB of
// other groups took 193 MiB of heap; streamed, about 1 MiB
// (TestPushMetricsReadsALargeGateway).
func decodeTotals(body io.Reader, grouping map[string]string) (_ map[string]map[string]float64, err error) {
	defer func() {
		if errors.Is(err, io.EOF) { // the answer stops before its end
			err = io.ErrUnexpectedEOF
		}
	}()
	in := &boundedReader{r: body}
	d := &totalsDecoder{in: in, dec: json.NewDecoder(in), grouping: grouping}
	d.bound()
	if err := wantDelim(d.dec, '{'); err != nil {
		return nil, err
	}
	for d.dec.More() {
		d.bound()
		key, err := d.dec.Token()
		if err != nil {
			return nil, err
		}
		d.bound()
		if err := d.member(key); err != nil {
			return nil, err
		}
		if d.done() {
			return d.totals, nil
		}
	}
	d.bound()
	if err := wantDelim(d.dec, '}'); err != nil {
		return nil, err
	}
	if d.status != "success" {
		return nil, fmt.Errorf("status %q, not success", d.status)
	}
	if d.totals == nil {
		d.totals = map[string]map[string]float64{}
	}
	return d.totals, nil
}

// totalsDecoder is decodeTotals part way through an answer: the stream it
// reads, bounded, and what it has found so far.
type totalsDecoder struct {
	in       *boundedReader
	dec      *json.Decoder
	grouping map[string]string
	status   string
	totals   map[string]map[string]float64 // the group's, once found
}

// bound lets dec read up to maxTotalsValue past where it is, enough for
// the next token or value.
func (d *totalsDecoder) bound() { d.in.limit = d.dec.InputOffset() + maxTotalsValue }

// done says whether the answer has told all decodeTotals needs of it: the
// rest need not be read.
func (d *totalsDecoder) done() bool { return d.status == "success" && d.totals != nil }

// member decodes the value of key, a key of the answer's object: the
// status, the groups of data, or a value of another key, skipped.
func (d *totalsDecoder) member(key json.Token) error {
	switch key {
	case "status":
		if err := d.dec.Decode(&d.status); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if d.status != "success" {
			return fmt.Errorf("status %q, not success", d.status)
		}
	case "data":
		return d.groups()
	default:
		var skipped json.RawMessage
		if err := d.dec.Decode(&skipped); err != nil {
			return fmt.Errorf("%v: %w", key, err)
		}
	}
	return nil
}

// groups decodes data, a list of groups (or null, none), a group at a
// time, and keeps the totals of the first whose labels are grouping. Once
// it has them after a status of success, it stops in the middle of the
// list: decodeTotals reads no further.
func (d *totalsDecoder) groups() error {
	t, err := d.dec.Token()
	if err != nil {
		return err
	}
	if t == nil { // null: no group
		return nil
	}
	if t != json.Delim('[') {
		return fmt.Errorf("data is %v, not a list of groups", t)
	}
	for d.dec.More() {
		d.bound()
		var group map[string]json.RawMessage
		if err := d.dec.Decode(&group); err != nil {
			return fmt.Errorf("a group: %w", err)
		}
		if d.totals != nil {
			continue // found, but the status is still to come
		}
		found, err := groupTotals(group, d.grouping)
		if err != nil {
			return err
		}
		d.totals = found
		if d.done() {
			return nil
		}
	}
	d.bound()
	return wantDelim(d.dec, ']')
}

// groupTotals returns the totals of the reclaimedCounters in group, an
// element of the data of an answer of totalsPath, by family name then by
// action, when its labels are exactly grouping; else nil.
func groupTotals(group map[string]json.RawMessage, grouping map[string]string) (map[string]map[string]float64, error) {
	raw, ok := group["labels"]
	if !ok {
		return nil, nil
	}
	var labels map[string]string
	if err := json.Unmarshal(raw, &labels); err != nil {
		return nil, fmt.Errorf("the labels of a group: %w", err)
	}
	if !maps.Equal(labels, grouping) {
		return nil, nil
	}
	totals := map[string]map[string]float64{}
	for _, c := range reclaimedCounters {
		raw, ok := group[c.name]
		if !ok {
			continue
		}
		var family struct {
			Metrics []struct {
				Labels map[string]string `json:"labels"`
				Value  string            `json:"value"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal(raw, &family); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		byAction := map[string]float64{}
		for _, m := range family.Metrics {
			v, err := strconv.ParseFloat(m.Value, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				// Counted on, such a value would make the totals go
				// back or stay wrong for good.
				return nil, fmt.Errorf("%s%v is %q, not a counter's value", c.name, m.Labels, m.Value)
			}
			byAction[m.Labels["action"]] = v
		}
		totals[c.name] = byAction
	}
	return totals, nil
}

// wantDelim reads the next token of dec, and fails unless it is d.
func wantDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("%v where %v was expected", t, d)
	}
	return nil
}

// boundedReader reads from r up to limit, the offset in r past which a
// Read fails with errTotalsValueTooLarge.
type boundedReader struct {
	r     io.Reader
	read  int64 // so far
	limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.read >= b.limit {
		return 0, errTotalsValueTooLarge
	}
	if left := b.limit - b.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// reclaimedTotals are the reclaimedCounters, each series at its total in
// totals plus what r's actions freed: every entry whose Reclaimed is set,
// but for planned ones, and none in a dry run.
func reclaimedTotals(totals map[string]map[string]float64, r report.Report) []prometheus.Collector {
	var out []prometheus.Collector
	for _, c := range reclaimedCounters {
		values := map[string]float64{}
		for _, a := range reclaimedActions {
			values[a] = totals[c.name][a]
		}
		for _, e := range r.Entries {
			if _, ok := values[e.Action]; ok && countsReclaimed(r, e) {
				values[e.Action] += max(0, c.amount(e.Reclaimed))
			}
		}
		out = append(out, &constCounters{desc: prometheus.NewDesc(c.name, c.help, []string{"action"}, nil), values: values})
	}
	return out
}

// countsReclaimed says whether what entry e of r freed counts in the
// nsman_reclaimed_* counters: whenever e.Reclaimed is set, whatever e's
// state (a SCALE_DOWN that failed part-way carries what it did scale
// down), but for a planned entry, and for any entry of a dry run, which
// freed nothing.
func countsReclaimed(r report.Report, e report.Entry) bool {
	return e.Reclaimed != nil && e.State != report.StatePlanned && !r.Summary.DryRun
}

// constCounters is a counter family of one label, a series for each value
// of reclaimedActions. Its series are constant metrics, not
// prometheus.Counters: a Counter carries the time it was made as its
// created timestamp, which would be each push's, and a Prometheus that
// ingests created timestamps would read every push as a reset to 0.
type constCounters struct {
	desc   *prometheus.Desc
	values map[string]float64 // by action
}

func (c *constCounters) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *constCounters) Collect(ch chan<- prometheus.Metric) {
	for _, a := range reclaimedActions {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, c.values[a], a)
	}
}

// sweepGauges are the metric families every push carries, each with every
// series it can have.
func sweepGauges(r report.Report) []prometheus.Collector {
	actions := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nsman_actions",
		Help: "Actions of the last nsman sweep, by action type and result: succeeded, failed, planned (dry run) or deferred (over --max-actions; a WEBHOOK whose receiver timed out in the sweep, or backing off).",
	}, []string{"action", "result"})
	for _, a := range metricActions {
		for _, res := range actionResults {
			actions.WithLabelValues(a, res).Set(0)
		}
	}
	holds := map[string]int{}
	for _, e := range r.Entries {
		if res, ok := actionResult(e); ok {
			actions.WithLabelValues(e.Action, res).Inc()
		}
		if e.HeldUntil != nil {
			holds["held"]++
		}
		if e.HoldIgnored != "" {
			holds["ignored"]++
		}
	}
	stuck, oldest := stuckCounts(r)
	return []prometheus.Collector{
		gauge("nsman_sweep_duration_seconds", "Wall time of the last nsman sweep.", r.Summary.DurationSeconds),
		byLabel("nsman_managers", "NamespaceManagers, and (rule, namespace) pairs, in the last nsman sweep, by the state the sweep left them in.",
			"state", metricStates, r.Summary.States),
		actions,
		byLabel("nsman_api_requests", "Kubernetes API requests made by the last nsman sweep, by HTTP method.", "method", metricMethods, r.Summary.Requests),
		byLabel("nsman_holds", "Managers and rule pairs of the last nsman sweep that a hold (nsman.k8s.consol.de/hold-until) kept waiting (held), or whose holds were ignored (ignored: unparseable, or beyond --max-hold).",
			"result", []string{"held", "ignored"}, holds),
		byLabel("nsman_notifications", "Notifications (--notify-url) of the last nsman sweep, by result: sent or failed.",
			"result", []string{"sent", "failed"}, r.Summary.Notifications),
		gauge("nsman_dry_run", "1 when the last nsman sweep was a dry run, else 0.", oneIf(r.Summary.DryRun)),
		byLabel("nsman_namespaces_stuck", "Namespaces that the last nsman sweep found stuck in Terminating (beyond --stuck-after), by reason; a namespace held for two reasons counts under both.",
			"reason", report.StuckReasons, stuck),
		gauge("nsman_namespaces_stuck_oldest_seconds", "Seconds since the deletion of the namespace stuck in Terminating the longest, as of the last nsman sweep; 0 when none is.", oldest),
		gauge("nsman_namespaces_asleep", "Namespaces a SLEEP policy keeps asleep as the last nsman sweep left them: those it put to sleep included, those it woke not.", float64(asleep(r))),
		byLabel("nsman_traffic_queries", "Traffic queries of IDLE conditions (one per source and window) of the last nsman sweep, by result: answered, or unanswered (Prometheus down, a timeout, a query error, an answer too large).",
			"result", []string{"answered", "unanswered"}, r.Summary.TrafficQueries),
		gauge("nsman_traffic_unknown", "Managers and rule pairs of the last nsman sweep whose IDLE policy waits for want of an answer of its traffic source.", float64(trafficUnknown(r))),
	}
}

// trafficUnknown counts r's entries whose traffic is not known.
func trafficUnknown(r report.Report) int {
	n := 0
	for _, e := range r.Entries {
		if e.TrafficUnknown() != "" {
			n++
		}
	}
	return n
}

// asleep counts the namespaces r's entries leave asleep, each once.
func asleep(r report.Report) int {
	namespaces := map[string]bool{}
	for _, e := range r.Entries {
		if e.State == report.StateAsleep || e.State == report.StateFired && policy.ActionKindOf(e.Action).KeepsState() && !e.Woke {
			namespaces[e.Target] = true
		}
	}
	return len(namespaces)
}

// stuckCounts counts the namespaces that r's entries say are stuck, by
// reason, each once however many entries name it, and returns how long
// (in seconds, at r.Summary.Now) the one stuck the longest has been
// Terminating, 0 when none is.
func stuckCounts(r report.Report) (byReason map[string]int, oldest float64) {
	seen := map[string]map[string]bool{} // by reason, then namespace
	var since time.Time
	for _, e := range r.Entries {
		if e.Stuck == nil {
			continue
		}
		ns := cmp.Or(e.Target, e.Namespace)
		for _, reason := range e.Stuck.Reasons {
			if seen[reason.Reason] == nil {
				seen[reason.Reason] = map[string]bool{}
			}
			seen[reason.Reason][ns] = true
		}
		if t := e.Stuck.Since; !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	byReason = map[string]int{}
	for reason, namespaces := range seen {
		byReason[reason] = len(namespaces)
	}
	if !since.IsZero() {
		oldest = max(0, r.Summary.Now.Sub(since).Seconds())
	}
	return byReason, oldest
}

// gauge is a gauge set to v.
func gauge(name, help string, v float64) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	g.Set(v)
	return g
}

// oneIf is 1 when b, else 0: the value of a yes-or-no gauge.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// byLabel is a gauge vector with one label: a series for each value of
// always, 0 unless counts says otherwise, and one for each other key of
// counts.
func byLabel[K ~string](name, help, label string, always []K, counts map[K]int) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{label})
	for _, k := range always {
		v.WithLabelValues(string(k)).Set(0)
	}
	for k, n := range counts {
		v.WithLabelValues(string(k)).Set(float64(n))
	}
	return v
}

// actionResult is the result label under which entry e counts in
// nsman_actions, and false when e attempted no action.
func actionResult(e report.Entry) (string, bool) {
	result := report.ResultOf(e.State)
	return result, result != "" && e.Action != ""
}
