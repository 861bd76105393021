package traffic

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// idleSeconds is the window of the test's IDLE policies: a few scrapes of
// Prometheus, which scrapes every second.
const idleSeconds = 6

// caseLabel marks the managers of one test, which its sweeps alone select.
const caseLabel = "nsman.test/traffic-case"

// sleepsOnTraffic creates, in namespace ns, a manager of ns that puts it to
// sleep once idle for idleSeconds by its activity and its traffic from
// source, and a Deployment of two replicas to put to sleep.
func sleepsOnTraffic(t *testing.T, ns, caseID string, source map[string]any) {
	t.Helper()
	createManager(t, ns, ns, caseID, source)
	if _, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), nsmantest.Deployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createManager creates manager "idle" in home, of target, labelled caseID.
func createManager(t *testing.T, home, target, caseID string, source map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policy.Group + "/" + policy.Version, "kind": policy.Kind,
		"metadata": map[string]any{"namespace": home, "name": "idle", "labels": map[string]any{caseLabel: caseID}},
		"spec": map[string]any{"namespace": target, "policies": []any{map[string]any{
			"name":      "idle",
			"condition": map[string]any{"type": policy.ConditionIdle, "params": map[string]any{"idleSeconds": int64(idleSeconds), "traffic": source}},
			"action":    map[string]any{"type": policy.ActionSleep},
		}}},
	}}
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// replicas is Deployment web's in ns.
func replicas(t *testing.T, ns string) int32 {
	t.Helper()
	return replicasOf(t, ns, "web")
}

// replicasOf is Deployment name's in ns.
func replicasOf(t *testing.T, ns, name string) int32 {
	t.Helper()
	d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// sweepUntil sweeps the case's managers every second until done says so
// of the entry of manager idle in ns, for at most a minute, and returns
// that entry.
func sweepUntil(t *testing.T, caseID, ns string, args []string, done func(report.Entry) bool) report.Entry {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		res := env.Sweep(t, append([]string{"-l", caseLabel + "=" + caseID}, args...)...)
		e := res.Entry(t, ns, "idle")
		if done(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("manager %s/idle: %s: %s (traffic %+v); report:\n%s\nstderr:\n%s", ns, e.State, e.Message, e.Traffic, res.Stdout, res.Stderr)
		}
		time.Sleep(time.Second)
	}
}

// Requests to a namespace keep it awake however old its activity is; once
// they stop it sleeps after idleSeconds, saying it saw none. A tenant's pod
// that exports ingress-nginx's counter, naming another namespace, keeps
// nothing awake: the preset counts only what was scraped from the
// controller's namespace. Prometheus stopped, nothing sleeps, the entry
// and a Warning Event, once, say why.
func TestTrafficKeepsANamespaceAwake(t *testing.T) {
	setup(t)
	caseID := fmt.Sprintf("awake-%d", time.Now().UnixNano())
	shop, victim := shared.Namespace(t), shared.Namespace(t)
	nginx := map[string]any{"preset": "ingress-nginx"}
	sleepsOnTraffic(t, shop, caseID, nginx)
	sleepsOnTraffic(t, victim, caseID, nginx)

	controller, tenant := nsmantest.StartTraffic(t), nsmantest.StartTraffic(t)
	prom := nsmantest.RunPrometheus(t,
		nsmantest.ScrapeJob{Name: "ingress-nginx", Targets: []string{controller.Addr}, Labels: map[string]string{"namespace": "ingress-nginx"}},
		nsmantest.ScrapeJob{Name: "tenant", Targets: []string{tenant.Addr}, Labels: map[string]string{"namespace": shop}},
	)
	stop := every(t, func() {
		controller.Requests(shop, 1)
		tenant.Requests(victim, 3)
	})
	args := []string{"--prometheus-url", prom.URL}
	awake := sweepUntil(t, caseID, shop, args, func(e report.Entry) bool {
		return e.Traffic != nil && e.Traffic.Requests != nil && *e.Traffic.Requests > 0
	})
	if awake.State != report.StateWaiting || !strings.Contains(awake.Message, "requests within 6s (traffic: preset ingress-nginx)") || replicas(t, shop) != 2 {
		t.Errorf("shop with requests: %s: %q, %d replicas; want it awake, waiting on its requests", awake.State, awake.Message, replicas(t, shop))
	}
	// Each sweep handles both: victim may have gone to sleep already.
	asleep := func(e report.Entry) bool { return e.State == report.StateFired || e.State == report.StateAsleep }
	slept := sweepUntil(t, caseID, victim, args, asleep)
	if !strings.Contains(slept.Message, "no requests in the last 6s (traffic: preset ingress-nginx)") || replicas(t, victim) != 0 {
		t.Errorf("victim, named by a tenant's counter only: %q, %d replicas; want it asleep, having seen no requests", slept.Message, replicas(t, victim))
	}

	stop()
	slept = sweepUntil(t, caseID, shop, args, asleep)
	if !strings.Contains(slept.Message, "no requests in the last 6s") || replicas(t, shop) != 0 {
		t.Errorf("shop once its requests stopped: %q, %d replicas; want it asleep", slept.Message, replicas(t, shop))
	}

	quiet := shared.Namespace(t)
	sleepsOnTraffic(t, quiet, caseID, nginx)
	time.Sleep((idleSeconds + 1) * time.Second) // idle by its activity
	prom.Stop()
	for sweep := range 2 {
		res := env.Sweep(t, "-l", caseLabel+"="+caseID, "--prometheus-url", prom.URL)
		e := res.Entry(t, quiet, "idle")
		if e.State != report.StateWaiting || e.TrafficUnknown() == "" || !strings.Contains(e.Message, "is not known") || replicas(t, quiet) != 2 {
			t.Errorf("sweep %d, Prometheus stopped: %s: %q, traffic %+v, %d replicas; want it awake, waiting, saying why", sweep, e.State, e.Message, e.Traffic, replicas(t, quiet))
		}
		if got := res.Report.Summary.TrafficQueries; got["unanswered"] != 1 || got["answered"] != 0 {
			t.Errorf("sweep %d: traffic queries %v, want one unanswered", sweep, got)
		}
	}
	if n := events(t, quiet, tell.TrafficUnknown); n != 1 {
		t.Errorf("%d %s Events after two sweeps, want one", n, tell.TrafficUnknown)
	}
}

// every calls do at once, then every 300ms until stop, which waits for
// the last call to end; t's end stops it too.
func every(t *testing.T, do func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			do()
			select {
			case <-quit:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() { close(quit) })
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// events counts the Events of reason on manager idle in ns.
func events(t *testing.T, ns, reason string) int {
	t.Helper()
	list, err := shared.Admin.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Name == "idle" && e.Reason == reason {
			n++
		}
	}
	return n
}

// manySeries serves a counter of requests for n namespaces.
func manySeries(t *testing.T, n int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE fleet_requests_total counter")
		for i := range n {
			fmt.Fprintf(w, "fleet_requests_total{namespace=\"ns-%d\"} %d\n", i, i)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A query of the platform's own (a trusted manager's) whose answer has
// 50,000 series is cut at --prometheus-max-series: no answer, and said so;
// nothing sleeps. A manager outside the trusted namespaces may not bring
// a query at all.
func TestTrafficAnswerCutAtTheCap(t *testing.T) {
	setup(t)
	caseID := fmt.Sprintf("cap-%d", time.Now().UnixNano())
	home, target := shared.Namespace(t), shared.Namespace(t)
	query := map[string]any{"query": `sum by (namespace) (increase(fleet_requests_total[$window]))`}
	createManager(t, home, target, caseID, query)
	if _, err := shared.Admin.AppsV1().Deployments(target).Create(t.Context(), nsmantest.Deployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenant := shared.Namespace(t)
	createManager(t, tenant, tenant, caseID, query)
	prom := nsmantest.RunPrometheus(t, nsmantest.ScrapeJob{Name: "fleet", Targets: []string{manySeries(t, 50_000)}})
	args := []string{"--prometheus-url", prom.URL, "--trusted-namespaces", home}
	e := sweepUntil(t, caseID, home, args, func(e report.Entry) bool {
		return strings.Contains(e.TrafficUnknown(), "more than")
	})
	if !strings.Contains(e.TrafficUnknown(), "more than 20000 series (--prometheus-max-series)") || e.State != report.StateWaiting || replicas(t, target) != 2 {
		t.Errorf("50,000 series: %s: %q, traffic %+v, %d replicas; want it waiting, cut at the cap", e.State, e.Message, e.Traffic, replicas(t, target))
	}
	res := env.Sweep(t, append([]string{"-l", caseLabel + "=" + caseID}, args...)...)
	if e := res.Entry(t, tenant, "idle"); e.State != report.StateForbidden || !strings.Contains(e.Message, "may read traffic only by a preset") {
		t.Errorf("a tenant's query: %s: %q; want it refused", e.State, e.Message)
	}
}
