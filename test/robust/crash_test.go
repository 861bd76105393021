package robust

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// killingProxy passes nsman's requests to the API server and, at the Nth,
// lets the request through, kills nsman before it can read the answer, and
// drops the connection: a sweep dying at that point of its request sequence.
type killingProxy struct {
	proxy  *httputil.ReverseProxy
	killAt int64
	seen   atomic.Int64
	victim atomic.Pointer[os.Process]
}

func (p *killingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.seen.Add(1)
	switch {
	case n < p.killAt:
		p.proxy.ServeHTTP(w, r)
		return
	case n == p.killAt:
		p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		if proc := p.victim.Load(); proc != nil {
			_ = proc.Kill()
		}
	}
	panic(http.ErrAbortHandler)
}

// TestKilledSweepsConverge kills a sweep at each of its first 20 requests;
// after the claims of the dead sweeps expire, one clean sweep completes
// every due action, touches nothing that is not due, and any webhook sent
// twice carries the same Idempotency-Key.
func TestKilledSweepsConverge(t *testing.T) {
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()

	// nsman reaches the API server through each scenario's proxy with the
	// ServiceAccount's token.
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

	const points = 20
	type scenario struct {
		run  string
		due  map[string]string // namespace -> action
		idle string
	}
	scenarios := make([]*scenario, points)
	for i := range scenarios {
		sc := &scenario{run: fmt.Sprintf("kill-%d", i+1), due: map[string]string{}}
		for _, action := range []string{"DELETE", "SCALE_DOWN", "WEBHOOK", "idle"} {
			ns := shared.Namespace(t)
			policy := map[string]any{"type": action}
			ttl := int64(0)
			switch action {
			case "idle":
				sc.idle, policy, ttl = ns, map[string]any{"type": "DELETE"}, 3600
			case "WEBHOOK":
				policy["params"] = map[string]any{"url": recv.URL + "/" + ns}
			case "SCALE_DOWN":
				createDeployment(t, ns, 2)
			}
			if action != "idle" {
				sc.due[ns] = action
			}
			createManager(t, e, ns, sc.run, ttl, policy)
		}
		scenarios[i] = sc
	}

	// All the killed sweeps at once, each through its own proxy.
	var wg sync.WaitGroup
	proxies := make([]*killingProxy, len(scenarios))
	for i, sc := range scenarios {
		proxy := &killingProxy{proxy: httputil.NewSingleHostReverseProxy(apiserver), killAt: int64(i + 1)}
		proxy.proxy.Transport = transport
		proxy.proxy.ErrorLog = log.New(io.Discard, "", 0)
		proxies[i] = proxy
		// TLS: client-go sends credentials to TLS servers only.
		srv := httptest.NewTLSServer(proxy)
		t.Cleanup(srv.Close)
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := cluster.WriteKubeconfig(kubeconfig, &rest.Config{Host: srv.URL, BearerToken: sa.BearerToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "sweep", "--kubeconfig", kubeconfig, "-l", "nsman.test/crash="+sc.run, "--claim-ttl", "10s", "--concurrency", "1", "--log-level", "error", "-o", "json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		proxy.victim.Store(cmd.Process)
		wg.Go(func() {
			if err := cmd.Wait(); err != nil && proxy.seen.Load() < proxy.killAt {
				t.Logf("sweep %d ended before its kill point: %v\n%s", proxy.killAt, err, stderr.String())
			}
		})
	}
	wg.Wait()
	killed := 0
	for _, p := range proxies {
		if p.seen.Load() >= p.killAt {
			killed++
		}
	}
	// A sweep over four managers makes about twenty requests: nearly every
	// point must have been reached.
	if killed < points-3 {
		t.Fatalf("only %d of %d sweeps were killed: the kill points miss the request sequence", killed, points)
	}
	t.Logf("%d of %d sweeps killed mid-way", killed, points)

	// Every claim a dead sweep left has expired after 10s.
	time.Sleep(11 * time.Second)
	for i, sc := range scenarios {
		t.Run(fmt.Sprintf("killed at request %d", i+1), func(t *testing.T) {
			res := e.Sweep(t, "-l", "nsman.test/crash="+sc.run)
			if res.Code != 0 {
				t.Fatalf("clean sweep: exit %d\n%s", res.Code, res.Stderr)
			}
			for ns, action := range sc.due {
				if !e.Deactivated(t, ns, ns) {
					t.Errorf("%s manager %s not converged: %+v", action, ns, res.Entry(t, ns, ns))
				}
				switch action {
				case "DELETE":
					if !e.NamespaceGoneOrTerminating(t, ns) {
						t.Errorf("namespace %s not deleted", ns)
					}
				case "SCALE_DOWN":
					d, err := shared.Admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if *d.Spec.Replicas != 0 || d.Annotations[sweep.ReplicasAnnotation] != "2" {
						t.Errorf("deployment in %s: replicas %d, record %q", ns, *d.Spec.Replicas, d.Annotations[sweep.ReplicasAnnotation])
					}
				case "WEBHOOK":
					keys := map[string]bool{}
					for _, d := range recv.Deliveries() {
						var body struct{ Namespace string }
						if json.Unmarshal(d.Body, &body) == nil && body.Namespace == ns {
							keys[d.Header.Get("Idempotency-Key")] = true
						}
					}
					if len(keys) != 1 {
						t.Errorf("webhook for %s delivered with keys %v, want one key", ns, keys)
					}
				}
			}
			if e.Deactivated(t, sc.idle, sc.idle) || e.NamespaceGoneOrTerminating(t, sc.idle) {
				t.Errorf("the manager that was not due was acted on")
			}
		})
	}
}

func createDeployment(t *testing.T, ns string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	_, err := shared.Admin.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/web:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func createManager(t *testing.T, e *nsmantest.Env, ns, run string, ttl int64, action map[string]any) {
	t.Helper()
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": ns, "labels": map[string]any{"nsman.test/crash": run}},
		"spec": map[string]any{"policies": []any{map[string]any{
			"name":      "act when due",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": ttl}},
			"action":    action,
		}}},
	}}
	if _, err := e.Dynamic.Resource(sweep.ManagerResource).Namespace(ns).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
