package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// A tenant's webhook reaches a Service of its own namespace, read through
// the API and dialled at its Pods, and public addresses; not a loopback or
// private address, nor another namespace's Service, nor an ExternalName
// Service, nor one without a selector, nor one whose selector picks no
// Pod (a headless one here). A trusted manager keeps the address policy.
// What the tenant reads says why, and nothing of the network.
func TestWebhookEgressByTrust(t *testing.T) {
	e := setup(t)
	own, loopback, other, external, headless, missing, silent, handmade := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t),
		shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := own
	recv := nsmantest.NewReceiver(t)
	sink := recv.ServiceURL(t, shared.Admin, own, "sink")
	// A Service whose port nothing listens on: a port scan would tell it
	// from a closed one.
	quietURL := nsmantest.SilentServiceURL(t, shared.Admin, silent, "sink")
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "sink", Namespace: external}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "hooks.example.com"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "sink", Namespace: headless}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "sink"}}},
	} {
		if _, err := shared.Admin.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A Service without a selector, whose endpoints its tenant writes by
	// hand: they may point anywhere (here, at the receiver).
	byHand := recv.ServiceURL(t, shared.Admin, handmade, "sink")
	if _, err := shared.Admin.CoreV1().Services(handmade).Patch(t.Context(), "sink", types.MergePatchType, []byte(`{"spec":{"selector":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := func(ns, url string) {
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("report at once", 0, webhookAction(url))}))
	}
	hook(own, sink+"/hooks/done")
	hook(loopback, recv.URL+"/hooks/done")
	hook(other, sink+"/hooks/done")
	hook(external, "http://sink."+external+".svc/hooks/done")
	hook(headless, "http://sink."+headless+".svc.cluster.local/hooks/done")
	hook(missing, "http://sink."+missing+".svc/hooks/done")
	hook(silent, quietURL+"/hooks/done")
	hook(handmade, byHand+"/hooks/by-hand")
	// A trusted manager keeps the address policy: loopback is allowed.
	trusted := nsmantest.ServiceAccountNamespace
	createManager(t, managerObj(trusted, loopback, caseID, []any{ttlPolicy("report at once", 0, webhookAction(recv.URL+"/trusted"))}, targeting(loopback)))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(trusted).Delete(context.Background(), loopback, metav1.DeleteOptions{})
	})

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantState(t, res, own, own, report.StateFired)
	wantState(t, res, trusted, loopback, report.StateFired)
	for _, tt := range []struct{ ns, want string }{
		{loopback, "refused: a loopback address; a tenant's webhook may reach public addresses and Services of its own namespace"},
		{other, "refused: Service sink is of namespace " + own + ": a webhook may reach Services of its manager's own namespace (" + other + ") only"},
		{external, "refused: the Service sink is of type ExternalName"},
		{headless, "refused: the Service sink has no ready endpoint of a Pod it selects in namespace " + headless},
		{missing, "refused: there is no Service sink in namespace " + missing},
		{silent, "failed: no connection"},
		{handmade, "refused: the Service sink has no selector"},
	} {
		got := wantState(t, res, tt.ns, tt.ns, report.StateFailed)
		if !strings.HasPrefix(got.Message, tt.want) {
			t.Errorf("%s: message %q, want it to begin %q", tt.ns, got.Message, tt.want)
		}
		st := managerStatus(t, tt.ns, tt.ns)
		if st.LastAction == nil || !strings.HasPrefix(st.LastAction.Message, tt.want) {
			t.Errorf("%s: status %+v, want its last action to say %q", tt.ns, st.LastAction, tt.want)
		}
		for _, leak := range []string{"127.", "connection refused", "dial tcp"} {
			if strings.Contains(got.Message, leak) {
				t.Errorf("%s: message %q tells the tenant %q", tt.ns, got.Message, leak)
			}
		}
	}
	paths := map[string]string{}
	for _, d := range recv.Deliveries() {
		paths[d.Path] = d.Header.Get("Idempotency-Key")
	}
	if len(paths) != 2 || paths["/hooks/done"] == "" || paths["/trusted"] == "" {
		t.Errorf("deliveries %v: want one to the tenant's own Service and one from the trusted manager", paths)
	}
	// The tenant's message is the whole story for the tenant; nsman's log has the rest.
	if !strings.Contains(res.Stderr, "connection refused") {
		t.Errorf("nsman's log does not say what the network answered:\n%s", res.Stderr)
	}
}

// A tenant's Service is read again before every retry: one whose selector
// its tenant removed after the first attempt (to write its endpoints by
// hand) is refused, and the receiver hears no second request.
func TestServiceChangedBetweenAttemptsIsRefused(t *testing.T) {
	refusedAfterTheFirstAttempt(t, "refused: since the first attempt, the Service sink has no selector", func(ctx context.Context, ns string) error {
		_, err := shared.Admin.CoreV1().Services(ns).Patch(ctx, "sink", types.MergePatchType, []byte(`{"spec":{"selector":null}}`), metav1.PatchOptions{})
		return err
	})
}

// refusedAfterTheFirstAttempt has a tenant's webhook to a Service of its
// own namespace answered 503 with Retry-After, once change has changed the
// Service or its Pods, and checks the retry is refused with want, with no
// second request.
func refusedAfterTheFirstAttempt(t *testing.T, want string, change func(ctx context.Context, ns string) error) {
	t.Helper()
	e := setup(t)
	ns := shared.Namespace(t)
	var requests atomic.Int32
	url := nsmantest.ServeAsService(t, shared.Admin, ns, "sink", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			if err := change(r.Context(), ns); err != nil {
				t.Errorf("after the first attempt: %v", err)
			}
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}), nil)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("report at once", 0, webhookAction(url+"/hook"))}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	got := wantState(t, res, ns, ns, report.StateFailed)
	if !strings.HasPrefix(got.Message, want) || requests.Load() != 1 {
		t.Errorf("%q after %d requests: want %q after one", got.Message, requests.Load(), want)
	}
}

// A tenant's webhook to a Service of its own namespace reaches the Pods its
// selector picks there, and nothing an EndpointSlice written by hand points
// at: an endpoint without a Pod, or whose Pod is another namespace's, not
// picked by the selector, on the host's network, or at another IP, is no
// endpoint nsman dials. Where kube-proxy would forward the Service's
// ClusterIP (to every endpoint of its slices), a listener on the ClusterIP
// stands in: nsman's POST reaches it no more.
func TestTenantServiceReachesOnlyItsOwnPods(t *testing.T) {
	e := setup(t)
	caseID := shared.Namespace(t)
	elsewhere := shared.Namespace(t)
	hostIP := nsmantest.ReceiverIP(t)
	selector := map[string]string{"app": "sink"}
	// counter listens on ip and counts the requests it hears.
	counter := func(ip netip.Addr) (netip.AddrPort, *atomic.Int32) {
		var hits atomic.Int32
		l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
		return netip.MustParseAddrPort(l.Addr().String()), &hits
	}
	type tenant struct {
		ns                string
		proxied, endpoint *atomic.Int32
	}
	tenants := map[string]tenant{}
	// hook makes namespace ns's Service sink (a selector, port http at the
	// ClusterIP stand-in) and a hand-made EndpointSlice of it at a
	// receiver on hostIP, whose target target chooses.
	hook := func(name string, target func(ns string) *corev1.ObjectReference) {
		ns := shared.Namespace(t)
		clusterIP, proxied := counter(nextLoopbackClusterIP(t))
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "sink"},
			Spec: corev1.ServiceSpec{
				ClusterIP: clusterIP.Addr().String(), Selector: selector,
				Ports: []corev1.ServicePort{{Name: "http", Port: int32(clusterIP.Port()), Protocol: corev1.ProtocolTCP}},
			},
		}
		createLoopbackService(t, ns, svc)
		at, endpoint := counter(hostIP)
		nsmantest.EndpointSlice(t, shared.Admin, ns, "sink", "sink-by-hand", at, target(ns))
		url := fmt.Sprintf("http://sink.%s.svc:%d/hooks/%s", ns, clusterIP.Port(), name)
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("report at once", 0, webhookAction(url))}))
		tenants[name] = tenant{ns: ns, proxied: proxied, endpoint: endpoint}
	}
	podRef := func(p *corev1.Pod) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
	}
	hook("own", func(ns string) *corev1.ObjectReference {
		return podRef(nsmantest.ReadyPod(t, shared.Admin, ns, "sink", selector, hostIP))
	})
	hook("no-pod", func(string) *corev1.ObjectReference { return nil })
	hook("no-such-pod", func(ns string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "sink"}
	})
	hook("another-namespace", func(string) *corev1.ObjectReference {
		return podRef(nsmantest.ReadyPod(t, shared.Admin, elsewhere, "sink-"+strconv.Itoa(len(tenants)), selector, hostIP))
	})
	hook("not-selected", func(ns string) *corev1.ObjectReference {
		return podRef(nsmantest.ReadyPod(t, shared.Admin, ns, "other", map[string]string{"app": "other"}, hostIP))
	})
	hook("host-network", func(ns string) *corev1.ObjectReference {
		return podRef(nsmantest.ReadyPod(t, shared.Admin, ns, "sink", selector, hostIP, func(p *corev1.Pod) { p.Spec.HostNetwork = true }))
	})
	hook("another-ip", func(ns string) *corev1.ObjectReference {
		// Not ready: the EndpointSlice controller's own endpoint of it, at
		// its IP, is no ready endpoint either.
		return podRef(nsmantest.ReadyPod(t, shared.Admin, ns, "sink", selector, netip.MustParseAddr("10.244.0.7"), func(p *corev1.Pod) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}))
	})

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	for name, tt := range tenants {
		if name == "own" {
			wantState(t, res, tt.ns, tt.ns, report.StateFired)
			if tt.endpoint.Load() != 1 || tt.proxied.Load() != 0 {
				t.Errorf("own Pod: %d requests at the Pod, %d at the ClusterIP; want one at the Pod", tt.endpoint.Load(), tt.proxied.Load())
			}
			continue
		}
		got, _ := res.Lookup(tt.ns, tt.ns)
		if want := "refused: the Service sink has no ready endpoint of a Pod it selects in namespace " + tt.ns; got.State != report.StateFailed || !strings.HasPrefix(got.Message, want) {
			t.Errorf("%s: %s %q, want failed, the message beginning %q", name, got.State, got.Message, want)
		}
		if tt.endpoint.Load() != 0 || tt.proxied.Load() != 0 {
			t.Errorf("%s: %d requests at the hand-made endpoint, %d at the ClusterIP; want none", name, tt.endpoint.Load(), tt.proxied.Load())
		}
	}
}

// A tenant's Pods are read again before every retry: a Pod its Service's
// selector no longer picks after the first attempt is dialled no more.
func TestPodLeftTheServiceBetweenAttemptsIsRefused(t *testing.T) {
	refusedAfterTheFirstAttempt(t, "refused: since the first attempt, the Service sink has no ready endpoint of a Pod it selects", func(ctx context.Context, ns string) error {
		pods, err := shared.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			return fmt.Errorf("the Service's Pod: %v, %d Pods", err, len(pods.Items))
		}
		_, err = shared.Admin.CoreV1().Pods(ns).Patch(ctx, pods.Items[0].Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/name":"elsewhere"}}}`), metav1.PatchOptions{})
		return err
	})
}

// loopbackServiceCIDR is where the ClusterIPs of
// TestTenantServiceReachesOnlyItsOwnPods's Services come from: a listener
// on one stands in for kube-proxy, which no test cluster runs.
var (
	loopbackServiceCIDR = netip.MustParsePrefix("127.77.0.0/16")
	loopbackCIDROnce    sync.Once
	loopbackMu          sync.Mutex
	lastLoopbackIP      = loopbackServiceCIDR.Addr().Next()
)

// nextLoopbackClusterIP is an address of loopbackServiceCIDR not used yet,
// once the ServiceCIDR exists.
func nextLoopbackClusterIP(t *testing.T) netip.Addr {
	t.Helper()
	var err error
	loopbackCIDROnce.Do(func() {
		cidr := &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: "nsman-test-loopback"},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{loopbackServiceCIDR.String()}},
		}
		if _, err = shared.Admin.NetworkingV1().ServiceCIDRs().Create(t.Context(), cidr, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	})
	if err != nil {
		t.Fatalf("create the loopback ServiceCIDR: %v", err)
	}
	loopbackMu.Lock()
	defer loopbackMu.Unlock()
	lastLoopbackIP = lastLoopbackIP.Next()
	return lastLoopbackIP
}

// createLoopbackService creates svc in namespace ns once the API server's
// allocator has seen the loopback ServiceCIDR.
func createLoopbackService(t *testing.T, ns string, svc *corev1.Service) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = shared.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if apierrors.IsInvalid(last) {
			return false, nil
		}
		return last == nil, last
	})
	if err != nil {
		t.Fatalf("create Service %s/%s at %s: %v (last: %v)", ns, svc.Name, svc.Spec.ClusterIP, err, last)
	}
}
