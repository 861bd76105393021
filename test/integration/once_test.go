package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// waitArrivals waits until the receiver has had n requests arrive.
func waitArrivals(t *testing.T, recv *nsmantest.Receiver, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-recv.Arrived():
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d webhook requests arrived within a minute", i, n)
		}
	}
}

// overlapping returns the deliveries under one Idempotency-Key whose times
// overlap: two deliveries of one firing under way at once.
func overlapping(deliveries []nsmantest.Delivery) []string {
	var out []string
	for i, a := range deliveries {
		for _, b := range deliveries[i+1:] {
			if a.Header.Get("Idempotency-Key") == b.Header.Get("Idempotency-Key") &&
				a.Received.Before(b.Answered) && b.Received.Before(a.Answered) {
				out = append(out, fmt.Sprintf("%s [%s, %s] and [%s, %s]", a.Path,
					a.Received.Format(time.StampMilli), a.Answered.Format(time.StampMilli),
					b.Received.Format(time.StampMilli), b.Answered.Format(time.StampMilli)))
			}
		}
	}
	return out
}

// A manager reached late in a long sweep gets a claim that expires
// --claim-ttl after it was made, not after the sweep began: a second sweep
// started while its action is under way leaves it alone, and no two
// deliveries of one firing overlap.
func TestClaimOutlivesAnActionReachedLate(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	recv.SetHold(4 * time.Second)
	// With one manager at a time, "late" is reached 12 s into the sweep,
	// past a 10 s --claim-ttl counted from the sweep's start.
	names := []string{"a-slow-1", "a-slow-2", "a-slow-3", "b-late"}
	for _, name := range names {
		createManager(t, managerObj(ns, name, ns, []any{ttlPolicy("notify", 0, webhookAction(recv.URL+"/"+name))}, targeting(ns)))
	}
	sweepArgs := []string{"-l", caseLabel + "=" + ns, "--concurrency", "1", "--claim-ttl", "10s"}

	first := make(chan nsmantest.Result, 1)
	go func() { first <- e.Sweep(t, sweepArgs...) }()
	waitArrivals(t, recv, len(names)) // the late manager's webhook is under way
	second := e.Sweep(t, sweepArgs...)
	if got := second.Entry(t, ns, "b-late"); got.State != sweep.StateBusy {
		t.Errorf("second sweep: late manager %s (%s), want busy while the first sweep's action is under way", got.State, got.Message)
	}
	res := <-first
	wantCode(t, res, 0)
	for _, name := range names {
		wantState(t, res, ns, name, sweep.StateFired)
	}
	deliveries := recv.Deliveries()
	if len(deliveries) != len(names) {
		t.Errorf("%d deliveries for %d firings", len(deliveries), len(names))
	}
	if o := overlapping(deliveries); len(o) > 0 {
		t.Errorf("deliveries of one firing overlap: %s", strings.Join(o, "; "))
	}
}

// A live claim made for an older generation of the spec still holds the
// manager: its action may be under way.
func TestLiveClaimOfAnOlderSpecMeansBusy(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setClaim(t, ns, ns, time.Now().Add(time.Hour), got.UID)
	// The spec changes while the claiming sweep acts: a new generation.
	edit := []byte(`{"spec":{"policies":[{"name":"delete at once","condition":{"type":"TTL","params":{"ttlSeconds":1}},"action":{"type":"DELETE"}}]}}`)
	if _, err := e.Dynamic.Resource(sweep.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, edit, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if gen := e.Manager(t, ns, ns).GetGeneration(); gen < 2 {
		t.Fatalf("generation %d after a spec edit", gen)
	}

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	busy := wantState(t, res, ns, ns, sweep.StateBusy)
	if !strings.Contains(busy.Message, "dead-sweep") {
		t.Errorf("message %q does not name the claiming sweep", busy.Message)
	}
	if e.NamespaceGoneOrTerminating(t, ns) || e.Deactivated(t, ns, ns) {
		t.Error("a manager claimed by another sweep was acted on")
	}
}

// While a sweep acts, the manager's status says the action is under way,
// never that it succeeded: `kubectl wait --for=condition=Fired` waits for
// the action, and a sweep killed meanwhile leaves no record of success.
func TestStatusSaysSucceededOnlyAfterTheAction(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	recv.SetHold(3 * time.Second)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("notify", 0, webhookAction(recv.URL+"/hook"))}))

	done := make(chan nsmantest.Result, 1)
	go func() { done <- e.Sweep(t, "-l", caseLabel+"="+ns) }()
	waitArrivals(t, recv, 1)
	during := managerStatus(t, ns, ns)
	res := <-done
	wantCode(t, res, 0)
	wantState(t, res, ns, ns, sweep.StateFired)

	if c := condition(during); during.State != sweep.StateActing || c.Status != metav1.ConditionFalse || c.Reason != "InProgress" {
		t.Errorf("while the action ran: state %q, Fired=%s (%s), want acting, False (InProgress)", during.State, c.Status, c.Reason)
	}
	if during.LastAction != nil {
		t.Errorf("while the action ran: lastAction %+v, want none before the first action ends", during.LastAction)
	}
	if during.Claim == nil || during.Claim.Sweep == "" {
		t.Errorf("while the action ran: no claim in %+v", during)
	}
	after := managerStatus(t, ns, ns)
	if c := condition(after); after.State != sweep.StateFired || c.Status != metav1.ConditionTrue {
		t.Errorf("after the action: state %q, Fired=%s, want fired, True", after.State, c.Status)
	}
	if after.LastAction == nil || after.LastAction.Result != sweep.ResultSucceeded {
		t.Errorf("after the action: lastAction %+v, want succeeded", after.LastAction)
	}
	if after.Claim != nil {
		t.Errorf("after the action: claim %+v left", after.Claim)
	}
}

// A manager that DELETEs the namespace it lives in costs two writes, the
// claim and the delete; the manager and its Events go with the namespace.
// Any other DELETE keeps its record, deactivation and Event.
func TestDeleteOfItsOwnNamespaceCostsTwoWrites(t *testing.T) {
	e := setup(t)
	own, other := shared.Namespace(t), shared.Namespace(t)
	caseID := own
	createManager(t, managerObj(own, own, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	// A manager in a trusted namespace that deletes another namespace.
	trusted := nsmantest.ServiceAccountNamespace
	createManager(t, managerObj(trusted, other, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(sweep.ManagerResource).Namespace(trusted).Delete(t.Context(), other, metav1.DeleteOptions{})
	})

	before := len(e.Writes(t))
	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	wantState(t, res, own, own, sweep.StateFired)
	wantState(t, res, trusted, other, sweep.StateFired)
	writes := e.Writes(t)[before:]

	byManager := map[string][]string{}
	for _, w := range writes {
		key := w.Namespace
		if w.Resource == "namespaces" {
			key = w.Name
		}
		if w.Namespace == trusted {
			key = other
		}
		byManager[key] = append(byManager[key], write(w))
	}
	wantWrites := map[string][]string{
		own:   {"patch namespacemanagers/status", "delete namespaces"},
		other: {"patch namespacemanagers/status", "delete namespaces", "patch namespacemanagers/status", "patch namespacemanagers", "create events"},
	}
	for m, want := range wantWrites {
		if got := byManager[m]; strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("manager of %s: writes %q, want %q", m, got, want)
		}
	}
	if !e.NamespaceGoneOrTerminating(t, own) || !e.NamespaceGoneOrTerminating(t, other) {
		t.Error("a namespace was not deleted")
	}
	if !e.Deactivated(t, trusted, other) {
		t.Error("the manager of another namespace was not deactivated")
	}

	// The manager in the namespace being deleted is left alone until it
	// goes: no write, however often it is swept.
	before = len(e.Writes(t))
	again := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, again, 0)
	if got, ok := again.Lookup(own, own); ok && got.State != sweep.StateTargetTerminating {
		t.Errorf("next sweep: %s (%s), want target-terminating until the manager is gone", got.State, got.Message)
	}
	if w := e.Writes(t)[before:]; len(w) > 0 {
		t.Errorf("next sweep wrote %v", w)
	}
}

func write(r cluster.Request) string {
	s := r.Verb + " " + r.Resource
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	return s
}

// claimStatus is the status a sweep writes when it claims a manager.
func claimStatus(generation int64, claim sweep.Claim) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{
		"observedGeneration": generation, "state": sweep.StateActing, "claim": claim,
	}})
}
