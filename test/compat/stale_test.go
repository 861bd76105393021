package compat

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

func notifyAfter(name string, seconds int64, url string) map[string]any {
	return map[string]any{
		"name":      name,
		"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": seconds}},
		"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": url}},
	}
}

// Under the original CRD the whole status is one annotation. A sweep that
// listed a manager before another sweep claimed it must not write its stale
// view over the claim: that would let a third sweep act while the claiming
// sweep's action is under way.
func TestStaleSweepLeavesAClaimAlone(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	slow, hook := nsmantest.NewReceiver(t), nsmantest.NewReceiver(t)
	slow.SetHold(4 * time.Second)
	hook.SetHold(7 * time.Second) // within the 10 s timeout of one attempt
	create := func(name string, policy map[string]any) {
		t.Helper()
		obj := manager(ns, name, ns, policy)
		_ = unstructured.SetNestedField(obj.Object, ns, "spec", "namespace")
		if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The managers are tenants': each receiver is a Service of ns.
	slowURL, hookURL := slow.ServiceURL(t, shared.Admin, ns, "slow"), hook.ServiceURL(t, shared.Admin, ns, "hook")
	// The stale sweep handles one manager at a time, the slow one first
	// (managers are listed by name).
	create("a-slow", notifyAfter("notify", 0, slowURL+"/a-slow"))
	create("b-claimed", notifyAfter("notify", 86400, hookURL+"/b-claimed"))
	args := []string{"-l", "nsman.test/case=" + ns, "--claim-ttl", "60s"}

	stale := make(chan nsmantest.Result, 1)
	go func() { stale <- e.Sweep(t, append(args, "--concurrency", "1")...) }()
	slow.WaitArrivals(t, 1) // the stale sweep has listed b-claimed, not yet due

	// b-claimed becomes due; another sweep claims it and calls its slow
	// receiver.
	edit := []byte(`{"spec":{"policies":[{"name":"notify","condition":{"type":"TTL","params":{"ttlSeconds":0}},"action":{"type":"WEBHOOK","params":{"url":"` + hookURL + `/b-claimed"}}}]}}`)
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), "b-claimed", types.MergePatchType, edit, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	claiming := make(chan nsmantest.Result, 1)
	go func() { claiming <- e.Sweep(t, args...) }()
	hook.WaitArrivals(t, 1)

	<-stale // it reached b-claimed after the claim, with its listed view
	var st status.Status
	if err := json.Unmarshal([]byte(e.Manager(t, ns, "b-claimed").GetAnnotations()[status.StatusAnnotation]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Claim == nil {
		t.Errorf("the claim is gone while its action is under way: status %+v", st)
	}
	third := e.Sweep(t, args...)
	if got := third.Entry(t, ns, "b-claimed"); got.State != report.StateBusy {
		t.Errorf("a sweep during the claimed action: %s (%s), want busy", got.State, got.Message)
	}

	res := <-claiming
	if got := res.Entry(t, ns, "b-claimed"); got.State != report.StateFired {
		t.Errorf("claiming sweep: %s (%s), want fired", got.State, got.Message)
	}
	if n := len(hook.Deliveries()); n != 1 {
		t.Errorf("%d deliveries of one firing, want 1", n)
	}
}
