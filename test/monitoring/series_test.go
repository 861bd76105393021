// Package monitoring tests nsman's alerting rules and Grafana dashboard
// (deploy/monitoring/) with promtool, on the series a real Pushgateway
// serves after nsman's own code pushed sweeps' reports to it.
package monitoring

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/metrics"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// step is how long a timeline does one thing: a sweep a minute, each with
// the report sweep returns for its time, or, with sweep nil, nothing
// pushed while Prometheus goes on scraping what the Pushgateway holds.
type step struct {
	minutes int
	sweep   func(at time.Time) report.Report
}

// sampled are the series Prometheus stores from scraping the Pushgateway
// once a minute, in promtool's input_series notation: by series
// (name{labels}), a value a minute, "_" where the series was not there.
type sampled map[string][]string

// pushTimeout bounds one push, as nsman sweep's own bound does.
const pushTimeout = 10 * time.Second

// record plays steps against a Pushgateway of its own: each minute, from
// the Unix epoch (promtool's time 0), pushes the sweep's report as nsman
// sweep does, then scrapes the Pushgateway and keeps every series of the
// families named nsman_*, with the labels Prometheus keeps under
// honor_labels: true (the Pushgateway's empty instance label drops out).
func record(t *testing.T, steps []step) sampled {
	t.Helper()
	return recordFleet(t, map[string][]step{"": steps})
}

// recordFleet plays the steps of each cluster of fleet as record does,
// side by side against one Pushgateway: each minute, each cluster's sweep
// (in the order of their names) pushes as nsman sweep --cluster-name=<its
// name> does, then the Pushgateway is scraped. A cluster named "" pushes
// without --cluster-name.
func recordFleet(t *testing.T, fleet map[string][]step) sampled {
	t.Helper()
	gw := nsmantest.StartPushgateway(t)
	out := sampled{}
	total := 0
	for _, steps := range fleet {
		n := 0
		for _, s := range steps {
			n += s.minutes
		}
		total = max(total, n)
	}
	for minute := range total {
		at := time.Unix(0, 0).UTC().Add(time.Duration(minute) * time.Minute)
		for _, cluster := range slices.Sorted(maps.Keys(fleet)) {
			if sweep := sweepAt(fleet[cluster], minute); sweep != nil {
				push(t, gw, cluster, sweep(at))
			}
		}
		for series, v := range scrape(t, gw) {
			for len(out[series]) < minute {
				out[series] = append(out[series], "_")
			}
			out[series] = append(out[series], v)
		}
	}
	for series := range out {
		for len(out[series]) < total {
			out[series] = append(out[series], "_")
		}
	}
	return out
}

// sweepAt is the sweep steps make at minute, nil for none (a step of
// nothing pushed, or past the last step).
func sweepAt(steps []step, minute int) func(at time.Time) report.Report {
	for _, s := range steps {
		if minute < s.minutes {
			return s.sweep
		}
		minute -= s.minutes
	}
	return nil
}

// push pushes r's metrics as nsman sweep --cluster-name=cluster does
// (cmd/sweep.go): the success timestamp only for a sweep that did not fail
// and was no dry run.
func push(t *testing.T, gw, cluster string, r report.Report) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pushTimeout)
	defer cancel()
	if err := metrics.PushMetrics(ctx, gw, "", cluster, r, !r.Failed() && !r.Summary.DryRun, nil); err != nil {
		t.Fatalf("push: %v", err)
	}
}

// scrape returns the value of every series of nsman's families that the
// Pushgateway at gw serves, by series in promtool's notation.
func scrape(t *testing.T, gw string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, mf := range nsmantest.ScrapePushgateway(t, gw) {
		if !strings.HasPrefix(name, "nsman_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[seriesName(name, m)] = strconv.FormatFloat(value(mf, m), 'g', -1, 64)
		}
	}
	return out
}

// seriesName is name{labels} with m's labels that have a value, sorted.
func seriesName(name string, m *dto.Metric) string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		if l.GetValue() != "" {
			labels[l.GetName()] = l.GetValue()
		}
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		pairs = append(pairs, k+"="+strconv.Quote(labels[k]))
	}
	return name + "{" + strings.Join(pairs, ",") + "}"
}

func value(mf *dto.MetricFamily, m *dto.Metric) float64 {
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// inputSeries is s as promtool's input_series.
func (s sampled) inputSeries() []inputSeries {
	var out []inputSeries
	for _, series := range slices.Sorted(maps.Keys(s)) {
		out = append(out, inputSeries{Series: series, Values: strings.Join(s[series], " ")})
	}
	return out
}

// sweepOf is the report of a sweep at at made of entries, counted as
// nsman's sweep counts them, with sent and failed notifications.
func sweepOf(at time.Time, notifications map[string]int, entries ...report.Entry) report.Report {
	states := map[report.State]int{}
	for _, e := range entries {
		states[e.State]++
	}
	return report.Report{Version: report.ReportVersion, Entries: entries, Summary: report.Summary{
		Now: at, Managers: len(entries), States: states, DurationSeconds: 2.5,
		Requests: map[string]int{"get": 12, "patch": 2, "delete": 1}, Notifications: notifications,
	}}
}

// sharded puts r in shard index of count.
func sharded(r report.Report, index, count int) report.Report {
	r.Summary.Shard = &report.Shard{Index: index, Count: count}
	return r
}

// The entries the timelines' sweeps are made of.
func deleted(name string) report.Entry {
	return report.Entry{Name: name, Namespace: name, Target: name, State: report.StateFired, Action: policy.ActionDelete,
		Reclaimed: &report.Reclaimed{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi"), Storage: resource.MustParse("10Gi"), LoadBalancers: 1}}
}

func webhookFailed(name string) report.Entry {
	return report.Entry{Name: name, Namespace: name, Target: name, State: report.StateFailed, Action: policy.ActionWebhook,
		Message: "POST: 500 Internal Server Error"}
}

// webhookBackingOff is a WEBHOOK that failed in an earlier sweep and is
// not tried again before its backoff has passed.
func webhookBackingOff(name string) report.Entry {
	return report.Entry{Name: name, Namespace: name, Target: name, State: report.StateDeferred, Action: policy.ActionWebhook,
		Message: "backing off after 1 failure(s)"}
}

func plannedDelete(name string) report.Entry {
	return report.Entry{Name: name, Namespace: name, Target: name, State: report.StatePlanned, Action: policy.ActionDelete}
}

func asleep(name string) report.Entry {
	return report.Entry{Name: name, Namespace: name, Target: name, State: report.StateAsleep, Action: policy.ActionSleep}
}

func waiting(name string) report.Entry {
	return report.Entry{Name: name, Namespace: name, Target: name, State: report.StateWaiting}
}

// stuckSince is an entry whose target has been Terminating since since,
// held by finalizers nobody removes.
func stuckSince(name string, since time.Time) report.Entry {
	return report.Entry{Name: name, Namespace: "platform", Target: name, State: report.StateTargetTerminating,
		Stuck: &report.Stuck{Since: since, Reasons: []report.StuckReason{{Reason: report.StuckFinalizersRemaining, Message: "1 PersistentVolumeClaim with finalizers"}}}}
}

// The sweeps of the timelines.
func healthy(at time.Time) report.Report {
	return sweepOf(at, map[string]int{"sent": 1}, deleted("team-a"), asleep("team-b"), waiting("team-c"))
}

func failing(at time.Time) report.Report {
	return sweepOf(at, map[string]int{"sent": 1, "failed": 1}, waiting("team-c"), webhookFailed("team-d"))
}

func stuck(at time.Time) report.Report {
	return sweepOf(at, nil, waiting("team-c"), stuckSince("team-e", time.Unix(0, 0).UTC().Add(-20*time.Minute)))
}

// A WEBHOOK whose receiver is down, in the sweeps that try it and in those
// between, while it backs off.
func webhookDown(at time.Time) report.Report {
	return sweepOf(at, nil, waiting("team-c"), webhookFailed("team-d"))
}

func webhookWaits(at time.Time) report.Report {
	return sweepOf(at, nil, waiting("team-c"), webhookBackingOff("team-d"))
}

// A sweep that deleted a namespace and could not tell anyone, and one with
// nothing to do or tell.
func notificationLost(at time.Time) report.Report {
	return sweepOf(at, map[string]int{"failed": 1}, deleted("team-a"), waiting("team-c"))
}

func quiet(at time.Time) report.Report {
	return sweepOf(at, nil, waiting("team-c"))
}

// dryRun is a sweep with --dry-run: it plans, acts on nothing, and pushes
// no success timestamp.
func dryRun(at time.Time) report.Report {
	r := sweepOf(at, nil, plannedDelete("team-a"), waiting("team-c"))
	r.Summary.DryRun = true
	return r
}

// inMinutes sweeps as on in the given minutes of a timeline, and as off in
// the others.
func inMinutes(on, off func(time.Time) report.Report, at ...int) func(time.Time) report.Report {
	return func(now time.Time) report.Report {
		if slices.Contains(at, int(now.Sub(time.Unix(0, 0))/time.Minute)) {
			return on(now)
		}
		return off(now)
	}
}

func shardOneOfTwo(sweep func(time.Time) report.Report) func(time.Time) report.Report {
	return func(at time.Time) report.Report { return sharded(sweep(at), 1, 2) }
}

// minutes is a promtool duration of n minutes.
func minutes(n int) string { return fmt.Sprintf("%dm", n) }
