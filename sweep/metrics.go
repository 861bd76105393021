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

// Values of nsman_actions's result label.
const (
	actionSucceeded = "succeeded"
	actionFailed    = "failed"
	actionPlanned   = "planned"
	actionDeferred  = "deferred"
)

var actionResults = []string{actionSucceeded, actionFailed, actionPlanned, actionDeferred}

// metricMethods are the HTTP methods nsman_api_requests always has series for,
// so that the metric is in every push (see PushMetrics) and reads 0 rather
// than missing when a sweep made no such request.
var metricMethods = []string{"get", "post", "put", "patch", "delete"}

// PushMetrics pushes the metrics of the sweep r to the Pushgateway at url
// (scheme://host:port, without /metrics/job/...), grouped under job
// (DefaultMetricsJob when empty) and, for a sharded sweep, shard=<index>.
// lastSuccess says whether the sweep counts
// as successful, normally !r.Failed(): only then is
// nsman_last_success_timestamp_seconds pushed, set to r.Summary.Now. client
// makes the request (http.DefaultClient when nil); ctx bounds it.
//
// The metrics, all gauges describing this one sweep:
//
//	nsman_sweep_duration_seconds          wall time of the sweep
//	nsman_managers{state}                 managers by State, every State present
//	nsman_actions{action,result}    actions by type and result: succeeded (fired),
//	                                      failed, planned (dry run), deferred (over the cap)
//	nsman_api_requests{method}            API requests by lower-case HTTP method
//	nsman_last_success_timestamp_seconds  when the last successful sweep ran
//	nsman_holds{result}                   entries held, or whose holds were ignored
//	nsman_notifications{result}           notifications sent or failed
//	nsman_dry_run                         1 for a dry run, else 0
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

	duration := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nsman_sweep_duration_seconds",
		Help: "Wall time of the last nsman sweep.",
	})
	duration.Set(r.Summary.DurationSeconds)

	managers := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nsman_managers",
		Help: "NamespaceManagers, and (rule, namespace) pairs, in the last nsman sweep, by the state the sweep left them in.",
	}, []string{"state"})
	for _, s := range metricStates {
		managers.WithLabelValues(string(s)).Set(0)
	}
	for s, n := range r.Summary.States {
		managers.WithLabelValues(string(s)).Set(float64(n))
	}

	actions := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nsman_actions",
		Help: "Actions of the last nsman sweep, by action type and result: succeeded, failed, planned (dry run) or deferred (over --max-actions).",
	}, []string{"action", "result"})
	for _, a := range metricActions {
		for _, res := range actionResults {
			actions.WithLabelValues(a, res).Set(0)
		}
	}
	for _, e := range r.Entries {
		if res, ok := actionResult(e); ok {
			actions.WithLabelValues(e.Action, res).Inc()
		}
	}

	requests := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nsman_api_requests",
		Help: "Kubernetes API requests made by the last nsman sweep, by HTTP method.",
	}, []string{"method"})
	for _, m := range metricMethods {
		requests.WithLabelValues(m).Set(0)
	}
	for m, n := range r.Summary.Requests {
		requests.WithLabelValues(m).Set(float64(n))
	}

	holds := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nsman_holds",
		Help: "Managers and rule pairs of the last nsman sweep that a hold (nsman.k8s.consol.de/hold-until) kept waiting (held), or whose holds were ignored (ignored: unparseable, or beyond --max-hold).",
	}, []string{"result"})
	holds.WithLabelValues("held").Set(0)
	holds.WithLabelValues("ignored").Set(0)
	for _, e := range r.Entries {
		if e.HeldUntil != nil {
			holds.WithLabelValues("held").Inc()
		}
		if e.HoldIgnored != "" {
			holds.WithLabelValues("ignored").Inc()
		}
	}

	notifications := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nsman_notifications",
		Help: "Notifications (--notify-url) of the last nsman sweep, by result: sent or failed.",
	}, []string{"result"})
	notifications.WithLabelValues("sent").Set(float64(r.Summary.Notifications["sent"]))
	notifications.WithLabelValues("failed").Set(float64(r.Summary.Notifications["failed"]))

	dryRun := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nsman_dry_run",
		Help: "1 when the last nsman sweep was a dry run, else 0.",
	})
	if r.Summary.DryRun {
		dryRun.Set(1)
	}

	reg.MustRegister(duration, managers, actions, requests, holds, notifications, dryRun)
	if lastSuccess {
		success := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nsman_last_success_timestamp_seconds",
			Help: "Unix time of the last nsman sweep in which no manager failed.",
		})
		success.Set(float64(r.Summary.Now.UnixMilli()) / 1e3)
		reg.MustRegister(success)
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

// actionResult is the result label under which entry e counts in
// nsman_actions, and false when e attempted no action.
func actionResult(e Entry) (string, bool) {
	if e.Action == "" {
		return "", false
	}
	switch e.State {
	case StateFired:
		return actionSucceeded, true
	case StateFailed:
		return actionFailed, true
	case StatePlanned:
		return actionPlanned, true
	case StateDeferred:
		return actionDeferred, true
	}
	return "", false
}
