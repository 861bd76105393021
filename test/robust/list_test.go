package robust

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// notifyingManagers creates n managers in namespace ns, named m-0…, each
// due for a webhook to url(i)/<name>: a Service of ns, since ns is a
// tenant's.
func notifyingManagers(t *testing.T, e *nsmantest.Env, ns string, n int, url func(i int) string) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("m-%d", i)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1",
			"kind":       "NamespaceManager",
			"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"nsman.test/run": ns}},
			"spec": map[string]any{"namespace": ns, "policies": []any{map[string]any{
				"name":      "notify",
				"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(0)}},
				"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": url(i) + "/" + name}},
			}}},
		}}
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// A listing that fails after some pages were handled still reports what the
// sweep did, exits 1 (a failure, not a usage error) and pushes its metrics.
func TestListingThatFailsHalfWay(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	sink := recv.ServiceURL(t, shared.Admin, ns, "sink")
	notifyingManagers(t, e, ns, 6, func(int) string { return sink })
	gateway := nsmantest.StartPushgateway(t)

	// The second request for a next page of managers (the third page) is
	// refused.
	var continued atomic.Int32
	kubeconfig := e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/namespacemanagers") && r.Method == http.MethodGet &&
				r.URL.Query().Get("continue") != "" && continued.Add(1) == 2 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","message":"refused by the test proxy","code":403}`)
				return
			}
			p.ServeHTTP(w, r)
		})
	})

	res := e.Sweep(t, "-l", "nsman.test/run="+ns, "--kubeconfig", kubeconfig, "--chunk-size", "2", "--pushgateway-url", gateway)
	if res.Code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Report.Summary.ListError, "refused by the test proxy") {
		t.Errorf("summary listError %q does not say why the listing stopped", res.Report.Summary.ListError)
	}
	if got := res.Report.Summary.States[report.StateFired]; got != 4 || len(res.Report.Entries) != 4 {
		t.Errorf("report: %d entries, %d fired; want the 4 managers of the first two pages, fired", len(res.Report.Entries), got)
	}
	if n := len(recv.Deliveries()); n != 4 {
		t.Errorf("%d webhooks delivered, want 4", n)
	}
	metrics := scrape(t, gateway)
	if !strings.Contains(metrics, `nsman_actions{action="WEBHOOK",instance="",job="nsman",result="succeeded"} 4`) {
		t.Errorf("pushed metrics do not count the 4 actions:\n%s", grep(metrics, "nsman_actions"))
	}
	if strings.Contains(metrics, "nsman_last_success_timestamp_seconds") {
		t.Error("a sweep whose listing failed pushed a success timestamp")
	}
}

// Between two pages of a listing, etcd may compact the snapshot the listing
// reads: the next page is answered 410 Expired, with a token that resumes
// after the last manager listed. The sweep goes on with it. (The API server
// serves continued lists from its watch cache's snapshots until it learns
// of the compaction, within 15 s: the sweep's list of namespaces, which the
// first manager waits for, is held until a token from before the
// compaction is refused. A webhook would not hold the listing up: WEBHOOK
// actions have workers of their own.)
func TestListingResumesPastAnExpiredContinueToken(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	sink := recv.ServiceURL(t, shared.Admin, ns, "sink")
	notifyingManagers(t, e, ns, 6, func(int) string { return sink })
	// A continue token from before the compaction tells when the API server
	// answers such tokens 410.
	managers := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns)
	probe, err := managers.List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil || probe.GetContinue() == "" {
		t.Fatalf("probe list: %v (continue %q)", err, probe.GetContinue())
	}
	arrived, release := make(chan struct{}), make(chan struct{})
	var hold, released sync.Once
	let := func() { released.Do(func() { close(release) }) }
	t.Cleanup(let)
	kubeconfig := e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces" {
				hold.Do(func() {
					close(arrived)
					<-release
				})
			}
			p.ServeHTTP(w, r)
		})
	})

	// One manager at a time, two a page: the third page is requested once
	// the first page's managers are evaluated, after the namespaces list.
	done := make(chan nsmantest.Result, 1)
	go func() {
		done <- e.Sweep(t, "-l", "nsman.test/run="+ns, "--kubeconfig", kubeconfig, "--chunk-size", "2", "--concurrency", "1")
	}()
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatal("the sweep did not list the namespaces within a minute")
	}
	// A write first, so that the compaction passes the revision of the
	// tokens handed out so far.
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(`{"metadata":{"annotations":{"nsman.test/compacted":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shared.CompactEtcd(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := managers.List(t.Context(), metav1.ListOptions{Limit: 1, Continue: probe.GetContinue()})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a continue token from before the compaction still answered after a minute (%v)", err)
		}
		time.Sleep(2 * time.Second)
	}
	let()
	res := <-done
	if res.Code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "continue token expired") {
		t.Errorf("no expired continue token met: the test did not test it; stderr:\n%s", res.Stderr)
	}
	if got := res.Report.Summary.States[report.StateFired]; got != 6 || res.Report.Summary.ListError != "" {
		t.Errorf("%d of 6 managers fired, listError %q", got, res.Report.Summary.ListError)
	}
}

func scrape(t *testing.T, gateway string) string {
	t.Helper()
	resp, err := http.Get(gateway + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func grep(text, word string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
