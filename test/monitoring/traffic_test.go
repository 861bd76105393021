package monitoring

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"syscall"
	"testing"
	"time"

	"github.com/nsman/nsman/test/nsmantest"
)

// The scrape jobs of TestTrafficPresetsSeeEachNamespace, each scraping the
// one exporter: ingress-nginx's controller as a ServiceMonitor or the
// usual kubernetes_sd_configs relabelling scrapes it (the pod's namespace
// as the target label `namespace`, honor_labels false), the same with
// honor_labels true, and the rest with no namespace label of their own.
const (
	nginxJob      = "ingress-nginx"
	nginxHonorJob = "ingress-nginx-honor-labels"
	meshJob       = "mesh"
)

// trafficWindow is the range of each query: far longer than the test runs,
// so that every sample Prometheus took is in it.
const trafficWindow = "1m"

// The queries that a traffic preset of IDLE can run, over the series
// that selector picks (`{job="..."}` here: every job scrapes every
// counter), each giving a namespace's requests in the window under the
// label `namespace`.

// nginxPreset: ingress-nginx's `namespace` is `exported_namespace` when the
// scrape gave the target a `namespace` of its own (the controller pod's),
// and `namespace` under honor_labels; label_replace takes the first when
// it is there, so the one query serves both.
func nginxPreset(selector string) string {
	return fmt.Sprintf(`sum by (namespace) (label_replace(increase(%s%s[%s]), "namespace", "$1", "exported_namespace", "(.+)"))`,
		nsmantest.NginxRequests, selector, trafficWindow)
}

// istioPreset: the namespace served is `destination_service_namespace`.
func istioPreset(selector string) string {
	return fmt.Sprintf(`sum by (namespace) (label_replace(increase(%s%s[%s]), "namespace", "$1", "destination_service_namespace", "(.*)"))`,
		nsmantest.IstioRequests, selector, trafficWindow)
}

// traefikPreset: Traefik names the namespace only at the start of
// `service`, "<namespace>-<service>-<port>@kubernetes". A service that is
// not a Kubernetes one gets namespace "" rather than keeping the
// target's own `namespace`.
func traefikPreset(selector string) string {
	return fmt.Sprintf(`sum by (namespace) (label_replace(label_replace(increase(%s%s[%s]), "namespace", "", "", ""), "namespace", "$1", "service", "(.+)-[^-]+-[^-]+@kubernetes(crd)?"))`,
		nsmantest.TraefikRequests, selector, trafficWindow)
}

// TestTrafficPresetsSeeEachNamespace scrapes the exporter of
// nsmantest.Traffic with a real Prometheus and checks, with a real PromQL
// query per preset, that each namespace's requests are seen under its own
// name (and where a name misleads), and that a Prometheus that is stopped
// answers no query: the connection is refused.
func TestTrafficPresetsSeeEachNamespace(t *testing.T) {
	ctx := t.Context()
	tr := nsmantest.StartTraffic(t)
	// These were served before Prometheus came: their series are there
	// from its first scrape, as they are for a controller that has been
	// running for a while. team's Service is a-web: Traefik names it
	// team-a-web-80@kubernetes.
	tr.Requests("shop", 1)
	tr.Requests("quiet", 1)
	tr.TraefikRequests("team", "a-web", 80, 1)
	prom := nsmantest.RunPrometheus(t,
		nsmantest.ScrapeJob{Name: nginxJob, Targets: []string{tr.Addr},
			Labels: map[string]string{"namespace": "ingress-nginx", "pod": "ingress-nginx-controller-7d9f8c6b5-x2x9q"}},
		nsmantest.ScrapeJob{Name: nginxHonorJob, Targets: []string{tr.Addr},
			Labels: map[string]string{"namespace": "ingress-nginx"}, HonorLabels: true},
		nsmantest.ScrapeJob{Name: meshJob, Targets: []string{tr.Addr}},
	)
	// Two scrapes of each job before the requests, so that increase has a
	// sample from before them.
	waitForQuery(t, ctx, prom.URL, `count(count_over_time(up[1m]) >= 2) == 3`)

	tr.Requests("shop", 5)
	tr.TraefikRequests("team", "a-web", 80, 3)
	// The first request of series that were not there before: increase
	// starts from the first sample Prometheus took, the series' 1, and so
	// never sees that request. (A preset that must see it counts a series
	// that appeared within the window as traffic.)
	tr.Requests("fresh", 1)

	job := func(name string) string { return `{job="` + name + `"}` }
	cases := []trafficCase{
		{"ingress-nginx, its namespace renamed exported_namespace", nginxPreset(job(nginxJob)),
			map[string]bool{"shop": true, "quiet": false, "fresh": false}},
		{"ingress-nginx under honor_labels", nginxPreset(job(nginxHonorJob)),
			map[string]bool{"shop": true, "quiet": false, "fresh": false}},
		// The trap: by `namespace` alone, every request is one to the
		// controller's own namespace.
		{"ingress-nginx by namespace alone", fmt.Sprintf(`sum by (namespace) (increase(%s%s[%s]))`,
			nsmantest.NginxRequests, job(nginxJob), trafficWindow),
			map[string]bool{"ingress-nginx": true}},
		{"istio", istioPreset(job(meshJob)),
			map[string]bool{"shop": true, "quiet": false, "fresh": false}},
		// The requests to team's Service a-web count as namespace team-a's
		// (Service web): a Traefik name cannot say where the namespace
		// ends when names have dashes.
		{"traefik", traefikPreset(job(meshJob)),
			map[string]bool{"shop": true, "quiet": false, "fresh": false, "team-a": true}},
	}
	checkTraffic(t, ctx, prom.URL, cases)

	prom.Stop()
	_, err := nsmantest.QueryPrometheus(ctx, prom.URL, nginxPreset(""))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a query of a stopped Prometheus: %v, want the connection refused", err)
	}
}

// trafficWait bounds how long the test waits for Prometheus to scrape what
// it needs: a few scrapes, one a second.
const trafficWait = 20 * time.Second

// trafficCase is a query and the namespaces it should see.
type trafficCase struct {
	name, query string
	want        map[string]bool // namespace → whether it had requests in the window
}

// checkTraffic polls each case's query until every one answers as it
// should, for at most trafficWait (the requests reach Prometheus with its
// next scrape of each job), then fails t for each that does not.
func checkTraffic(t *testing.T, ctx context.Context, url string, cases []trafficCase) {
	t.Helper()
	deadline := time.Now().Add(trafficWait)
	for {
		var wrong []string
		for _, tc := range cases {
			got, err := namespacesSeen(ctx, url, tc.query)
			if err != nil || !maps.Equal(got, tc.want) {
				wrong = append(wrong, fmt.Sprintf("%s: %s\nnamespaces with requests: %v (%v), want %v",
					tc.name, tc.query, got, err, tc.want))
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

// namespacesSeen runs query and says, for each namespace it answers, whether
// its requests in the window are more than none.
func namespacesSeen(ctx context.Context, url, query string) (map[string]bool, error) {
	v, err := nsmantest.QueryPrometheus(ctx, url, query)
	if err != nil {
		return nil, err
	}
	got := map[string]bool{}
	for ns, n := range nsmantest.ByLabel(v, "namespace") {
		got[ns] = n > 0
	}
	return got, nil
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
