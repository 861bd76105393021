package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// A tenant's webhook reaches a Service of its own namespace, read through
// the API and dialled at its ClusterIP, and public addresses; not a
// loopback or private address, nor another namespace's Service, nor an
// ExternalName or headless Service, nor one without a selector. A trusted manager keeps the address
// policy. What the tenant reads says why, and nothing of the network.
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
		{ObjectMeta: metav1.ObjectMeta{Name: "sink", Namespace: headless}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}},
	} {
		if _, err := shared.Admin.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A Service without a selector, whose endpoints its tenant writes by
	// hand: its ClusterIP may forward anywhere (here, to the receiver).
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
		_ = e.Dynamic.Resource(sweep.ManagerResource).Namespace(trusted).Delete(context.Background(), loopback, metav1.DeleteOptions{})
	})

	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantState(t, res, own, own, sweep.StateFired)
	wantState(t, res, trusted, loopback, sweep.StateFired)
	for _, tt := range []struct{ ns, want string }{
		{loopback, "refused: a loopback address; a tenant's webhook may reach public addresses and Services of its own namespace"},
		{other, "refused: Service sink is of namespace " + own + ": a webhook may reach Services of its manager's own namespace (" + other + ") only"},
		{external, "refused: the Service sink is of type ExternalName"},
		{headless, "refused: the Service sink is headless"},
		{missing, "refused: there is no Service sink in namespace " + missing},
		{silent, "failed: no connection"},
		{handmade, "refused: the Service sink has no selector"},
	} {
		got := wantState(t, res, tt.ns, tt.ns, sweep.StateFailed)
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
	e := setup(t)
	ns := shared.Namespace(t)
	var requests atomic.Int32
	url := nsmantest.ServeAsService(t, shared.Admin, ns, "sink", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			if _, err := shared.Admin.CoreV1().Services(ns).Patch(r.Context(), "sink", types.MergePatchType, []byte(`{"spec":{"selector":null}}`), metav1.PatchOptions{}); err != nil {
				t.Errorf("remove the selector: %v", err)
			}
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}), nil)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("report at once", 0, webhookAction(url+"/hook"))}))

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	got := wantState(t, res, ns, ns, sweep.StateFailed)
	if want := "refused: since the first attempt, the Service sink has no selector"; !strings.HasPrefix(got.Message, want) || requests.Load() != 1 {
		t.Errorf("%q after %d requests: want %q after one", got.Message, requests.Load(), want)
	}
}
