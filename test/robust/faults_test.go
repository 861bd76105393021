package robust

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// faultyProxy passes requests to the API server and spoils about one in ten:
// a 500, a 429 asking to retry after a second, a connection reset before
// the request reaches the server, one after it did (the write happened, the
// answer is lost), or a two-second delay.
type faultyProxy struct {
	proxy *httputil.ReverseProxy

	mu     sync.Mutex
	rand   *rand.Rand
	faults map[string]int
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault := ""
	if p.rand.IntN(10) == 0 {
		fault = []string{"500", "429", "reset", "reset after", "slow"}[p.rand.IntN(5)]
		p.faults[fault]++
	}
	p.mu.Unlock()
	switch fault {
	case "500":
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`, http.StatusInternalServerError)
	case "429":
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
	case "reset":
		panic(http.ErrAbortHandler)
	case "reset after":
		p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler)
	case "slow":
		time.Sleep(2 * time.Second)
		p.proxy.ServeHTTP(w, r)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// TestSweepUnderAPIFaults runs a sweep of 30 due managers through an API
// server connection that fails about one request in ten: it ends within its
// deadline, and one clean sweep after it converges with nothing lost and
// nothing done twice.
func TestSweepUnderAPIFaults(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()
	const run = "faults"

	due := map[string]string{}
	var idle []string
	for i := range 40 {
		ns := shared.Namespace(t)
		action := []string{"DELETE", "SCALE_DOWN", "WEBHOOK", "idle"}[i%4]
		policy, ttl := map[string]any{"type": action}, int64(0)
		switch action {
		case "idle":
			idle = append(idle, ns)
			policy, ttl = map[string]any{"type": "DELETE"}, 3600
		case "WEBHOOK":
			policy["params"] = map[string]any{"url": recv.URL + "/" + ns}
		case "SCALE_DOWN":
			createDeployment(t, ns, 2)
		}
		if action != "idle" {
			due[ns] = action
		}
		createManager(t, e, ns, run, ttl, policy)
	}

	sa, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := url.Parse(sa.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(&rest.Config{Host: sa.Host, TLSClientConfig: sa.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	proxy := &faultyProxy{proxy: httputil.NewSingleHostReverseProxy(apiserver), rand: rand.New(rand.NewPCG(1, 2)), faults: map[string]int{}}
	proxy.proxy.Transport = transport
	proxy.proxy.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewTLSServer(proxy)
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := cluster.WriteKubeconfig(kubeconfig, &rest.Config{Host: srv.URL, BearerToken: sa.BearerToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}); err != nil {
		t.Fatal(err)
	}

	before, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, err := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+run, "--claim-ttl", "20s", "--log-level", "error", "-o", "json").Output()
	took := time.Since(began)
	var report sweep.Report
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		// The sweep may not even start when its first requests fail; that
		// is an exit 2 with a clear message, and the clean sweep catches up.
		t.Logf("faulty sweep printed no report (%v): %v", err, jerr)
	} else {
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
		if (code == 1) != report.Failed() || code > 1 {
			t.Errorf("faulty sweep: exit %d with %d failed", code, report.Summary.States[sweep.StateFailed])
		}
		t.Logf("faulty sweep: %v in %s, exit %d", report.Summary.States, took.Round(time.Millisecond), code)
	}
	proxy.mu.Lock()
	t.Logf("faults injected: %v", proxy.faults)
	proxy.mu.Unlock()
	if took > time.Minute {
		t.Errorf("the faulty sweep took %s", took)
	}

	// Claims left by writes whose answers were lost expire after 20s.
	time.Sleep(21 * time.Second)
	res := e.Sweep(t, "-l", "nsman.test/crash="+run)
	if res.Code != 0 {
		t.Fatalf("clean sweep: exit %d\n%s", res.Code, res.Stderr)
	}
	after, err := shared.AuditedRequests(ctx, e.User)
	if err != nil {
		t.Fatal(err)
	}
	deletes, scales := map[string]int{}, map[string]int{}
	for _, r := range after[len(before):] {
		switch {
		case r.Verb == "delete" && r.Resource == "namespaces" && r.Code == 200:
			deletes[r.Name]++
		case r.Verb == "patch" && r.Resource == "deployments" && r.Code == 200:
			scales[r.Namespace]++
		}
	}
	keys := map[string]map[string]bool{}
	for _, d := range recv.Deliveries() {
		var body struct{ Namespace string }
		if json.Unmarshal(d.Body, &body) == nil {
			if keys[body.Namespace] == nil {
				keys[body.Namespace] = map[string]bool{}
			}
			keys[body.Namespace][d.Header.Get("Idempotency-Key")] = true
		}
	}
	for ns, action := range due {
		if !e.Deactivated(t, ns, ns) {
			t.Errorf("%s manager %s lost: %+v", action, ns, res.Entry(t, ns, ns))
		}
		switch action {
		case "DELETE":
			if deletes[ns] != 1 {
				t.Errorf("namespace %s deleted %d times", ns, deletes[ns])
			}
		case "SCALE_DOWN":
			if scales[ns] != 1 {
				t.Errorf("deployment in %s scaled %d times", ns, scales[ns])
			}
			d, err := shared.Admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != 0 || d.Annotations[sweep.ReplicasAnnotation] != "2" {
				t.Errorf("deployment in %s: replicas %d, record %q", ns, *d.Spec.Replicas, d.Annotations[sweep.ReplicasAnnotation])
			}
		case "WEBHOOK":
			if len(keys[ns]) != 1 {
				t.Errorf("webhook for %s delivered with keys %v, want exactly one key", ns, keys[ns])
			}
		}
	}
	for _, ns := range idle {
		if e.Deactivated(t, ns, ns) || e.NamespaceGoneOrTerminating(t, ns) {
			t.Errorf("manager %s was not due but was acted on", ns)
		}
	}
}
