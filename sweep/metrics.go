package sweep

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/nsman/nsman/policy"
)

// DefaultMetricsJob is the Pushgateway job that PushMetrics groups a sweep's
// metrics under when it is given none.
const DefaultMetricsJob = "nsman"

// metricStates lists every State, so that nsman_managers has a series for
// each one, 0 when no manager is in it: dashboards and alerts see a zero
// rather than no data.
var metricStates = []State{
	StateDeactivated, StateInvalid, StateForbidden, StateTargetMissing, StateTargetTerminating,
	StateWaiting, StatePlanned, StateFired, StateFailed, StateDeferred, StateBusy, StateDone, StateGoverned,
}

// metricActions are the action types nsman_actions always has series for.
var metricActions = []string{policy.ActionDelete, policy.ActionScaleDown, policy.ActionWebhook}

// actionResults are the values of nsman_actions's result label: an
// action's Result, or planned (dry run) or deferred (over the cap, or a
// WEBHOOK deferred or backing off).
var actionResults = []string{ResultSucceeded, ResultFailed, string(StatePlanned), string(StateDeferred)}

// metricMethods are the HTTP methods nsman_api_requests always has series for,
// so that the metric is in every push (see PushMetrics) and reads 0 rather
// than missing when a sweep made no such request.
var metricMethods = []string{"get", "post", "put", "patch", "delete"}

// PushMetrics pushes the metrics of the sweep r, gauges of this one sweep
// (sweepGauges), to the Pushgateway at url (scheme://host:port), grouped
// under job (DefaultMetricsJob when empty) and, for a sharded sweep,
// shard=<index>. Only when lastSuccess (normally !r.Failed()) is
// nsman_last_success_timestamp_seconds pushed, set to r.Summary.Now. client
// makes the request (http.DefaultClient when nil); ctx bounds it.
//
// The push is an Add (HTTP POST), not a Push (PUT). A PUT replaces the whole
// group, so a failed sweep, which must not claim success, would erase the
// previous success timestamp and with it the "no successful sweep for N
// hours" alert that the timestamp exists for. A POST replaces only the metric
// families it carries: every family but the success timestamp is in every
// push (their vectors are pre-filled with zeros), so each push still replaces
// all of the previous sweep's values, including series that are gone now,
// while a failed sweep leaves the timestamp of the last success as it was.
// One group and one request also keep the two consistent: there is no
// separate success group to fall out of step or to carry an extra label.
func PushMetrics(ctx context.Context, url, job string, r Report, lastSuccess bool, client *http.Client) error {
	if job == "" {
		job = DefaultMetricsJob
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(sweepGauges(r)...)
	if lastSuccess {
		reg.MustRegister(gauge("nsman_last_success_timestamp_seconds", "Unix time of the last nsman sweep in which no manager failed.",
			float64(r.Summary.Now.UnixMilli())/1e3))
	}
	p := push.New(url, job).Gatherer(reg)
	if sh := r.Summary.Shard; sh != nil {
		// Each shard has a group of its own: in one, the shards would
		// overwrite each other's figures.
		p = p.Grouping("shard", strconv.Itoa(sh.Index))
	}
	if client != nil {
		p = p.Client(client)
	}
	if err := p.AddContext(ctx); err != nil {
		return fmt.Errorf("push metrics to the pushgateway: %w", err)
	}
	return nil
}

// sweepGauges are the metric families every push carries, each with every
// series it can have.
func sweepGauges(r Report) []prometheus.Collector {
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
	}
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
func actionResult(e Entry) (string, bool) {
	result, ok := resultOf[e.State]
	return result, ok && e.Action != ""
}

// resultOf is the result of an action whose entry is in a state.
var resultOf = map[State]string{StateFired: ResultSucceeded, StateFailed: ResultFailed, StatePlanned: string(StatePlanned), StateDeferred: string(StateDeferred)}
