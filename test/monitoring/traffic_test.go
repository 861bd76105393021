package monitoring

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/prom"
	"github.com/nsman/nsman/internal/usage"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/test/nsmantest"
)

// trafficWindow is the window of the test's IDLE condition: short enough
// that a namespace's requests made before it are out of it once the test
// has waited, long enough that the checks run within it.
const trafficWindow = 10 * time.Second

// trafficWait bounds how long the test waits for Prometheus to scrape what
// it needs: a few scrapes, one a second.
const trafficWait = 20 * time.Second

// The namespaces of TestTrafficPresetsSeeEachNamespace: shop is used all
// along; quiet was, before the window; fresh gets its first request ever
// within it; team's Service a-web and team-a's Service web are both
// team-a-web-80@kubernetes to Traefik; victim is named only by a tenant's
// pod exporting a counter of ingress-nginx's name.
var trafficNamespaces = []string{"shop", "quiet", "fresh", "team", "team-a", "victim"}

// TestTrafficPresetsSeeEachNamespace asks a real Prometheus, through
// nsman's own client and traffic reader, each preset's query over the
// counters as ingress-nginx, Istio and Traefik export them, scraped as
// ServiceMonitors and kubernetes_sd_configs relabelling scrape them: each
// namespace's requests are seen under its own name, a series that
// appeared within the window counts, a tenant's forged counter counts for
// no one else, and a Prometheus stopped gives no answer.
func TestTrafficPresetsSeeEachNamespace(t *testing.T) {
	ctx := t.Context()
	controller, tenant := nsmantest.StartTraffic(t), nsmantest.StartTraffic(t)
	sidecars := map[string]*nsmantest.Traffic{}
	jobs := []nsmantest.ScrapeJob{
		{Name: "ingress-nginx", Targets: []string{controller.Addr}, Labels: map[string]string{"namespace": "ingress-nginx", "pod": "ingress-nginx-controller-7d9f8c6b5-x2x9q"}},
		{Name: "ingress-nginx-honor-labels", Targets: []string{controller.Addr}, Labels: map[string]string{"namespace": "ingress-nginx"}, HonorLabels: true},
		{Name: "traefik", Targets: []string{controller.Addr}, Labels: map[string]string{"namespace": "traefik"}},
		// A tenant's pod, in a namespace of its own, that exports the
		// counters naming victim.
		{Name: "tenant", Targets: []string{tenant.Addr}, Labels: map[string]string{"namespace": "tenant"}},
	}
	// Istio's sidecars are scraped each in its pod's namespace.
	for _, ns := range []string{"shop", "quiet", "fresh"} {
		sidecars[ns] = nsmantest.StartTraffic(t)
		jobs = append(jobs, nsmantest.ScrapeJob{Name: "sidecar-" + ns, Targets: []string{sidecars[ns].Addr}, Labels: map[string]string{"namespace": ns}})
	}
	requests := func(ns string, n int) {
		controller.Requests(ns, n)
		if s, ok := sidecars[ns]; ok {
			s.IstioRequests(ns, "web", n)
		}
	}
	// Before the window: shop, quiet, team (Service a-web) are served.
	requests("shop", 1)
	requests("quiet", 1)
	controller.TraefikRequests("team", "a-web", 80, 1)
	tenant.Requests("victim", 1)
	p := nsmantest.RunPrometheus(t, jobs...)
	waitForQuery(t, ctx, p.URL, fmt.Sprintf(`count(count_over_time(up[1m]) >= 2) == %d`, len(jobs)))
	time.Sleep(trafficWindow + time.Second)

	// Within it: shop and team all along, the tenant's forged counter of
	// victim, and fresh's first request ever.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			requests("shop", 1)
			controller.TraefikRequests("team", "a-web", 80, 1)
			tenant.Requests("victim", 5)
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	requests("fresh", 1)

	used := map[string]bool{"shop": true, "fresh": true}
	traefikUsed := map[string]bool{"shop": true, "fresh": true, "team": true, "team-a": true}
	cases := []trafficCase{
		{"ingress-nginx, its namespace renamed exported_namespace", "ingress-nginx", "", used},
		{"ingress-nginx under honor_labels, pinned by job", "ingress-nginx", `job="ingress-nginx-honor-labels"`, used},
		{"istio, by the sidecar's namespace", "istio", "", used},
		{"traefik, team-a-web-80 shared by team and team-a", "traefik", "", traefikUsed},
	}
	client, err := prom.New(prom.Config{URL: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	checkTraffic(t, ctx, client, cases)

	p.Stop()
	a := readTraffic(ctx, client, "ingress-nginx", "")
	if got := a["shop"]; !strings.Contains(got.Unknown, "connection refused") {
		t.Errorf("Prometheus stopped: %+v, want no answer, the connection refused", got)
	}
}

// trafficCase is a preset, pinned by match ("" for its own), and the
// namespaces it should see used.
type trafficCase struct {
	name, preset, match string
	want                map[string]bool // namespace → whether it had requests in the window
}

// readTraffic is what nsman's traffic reader answers of each of
// trafficNamespaces, from preset pinned by match.
func readTraffic(ctx context.Context, client *prom.Client, preset, match string) map[string]traffic.Answer {
	exists := func(context.Context) (map[string]cluster.Namespace, error) {
		all := map[string]cluster.Namespace{}
		for _, ns := range trafficNamespaces {
			all[ns] = cluster.Namespace{Name: ns}
		}
		return all, nil
	}
	tr := usage.NewTraffic(usage.TrafficConfig{Querier: client, Match: map[string]string{preset: match}}, exists)
	if match == "" {
		tr = usage.NewTraffic(usage.TrafficConfig{Querier: client}, exists)
	}
	c := policy.Condition{Type: policy.ConditionIdle, Idle: trafficWindow, Traffic: &traffic.Source{Preset: preset}}
	out := map[string]traffic.Answer{}
	for _, ns := range trafficNamespaces {
		out[ns] = tr.In(ctx, ns, c)
	}
	return out
}

// checkTraffic polls each case until every one answers as it should, for
// at most trafficWait (the requests reach Prometheus with its next scrape
// of each job), then fails t for each that does not.
func checkTraffic(t *testing.T, ctx context.Context, client *prom.Client, cases []trafficCase) {
	t.Helper()
	deadline := time.Now().Add(trafficWait)
	for {
		var wrong []string
		for _, tc := range cases {
			got := map[string]bool{}
			var unknown []string
			for ns, a := range readTraffic(ctx, client, tc.preset, tc.match) {
				if a.Unknown != "" {
					unknown = append(unknown, ns+": "+a.Unknown)
				}
				if a.Requests > 0 {
					got[ns] = true
				}
			}
			if len(unknown) > 0 || !maps.Equal(got, tc.want) {
				wrong = append(wrong, fmt.Sprintf("%s: used %v, want %v; unknown: %v", tc.name, got, tc.want, unknown))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, w := range wrong {
				t.Error(w)
			}
			return
		}
		time.Sleep(nsmantest.ScrapeInterval / 4)
	}
}

// waitForQuery waits until the query promQL of the Prometheus at url
// answers a sample, as a comparison that holds does, and fails t if it
// does not within trafficWait.
func waitForQuery(t *testing.T, ctx context.Context, url, promQL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, trafficWait)
	defer cancel()
	var last string
	for {
		v, err := nsmantest.QueryPrometheus(ctx, url, promQL)
		if err == nil && len(v) > 0 {
			return
		}
		last = fmt.Sprintf("%v %v", v, err)
		select {
		case <-ctx.Done():
			t.Fatalf("%s held not within %s; last answer: %s", promQL, trafficWait, last)
		case <-time.After(nsmantest.ScrapeInterval / 4):
		}
	}
}
