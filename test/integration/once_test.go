package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// sweepWithWebhookUnderWay creates a manager due for a webhook to a
// receiver that holds each request 3 s, starts a sweep of it, and returns
// once the webhook is under way: the manager's namespace and the sweep's
// result, to come.
func sweepWithWebhookUnderWay(t *testing.T) (string, <-chan nsmantest.Result) {
	t.Helper()
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	recv.SetHold(3 * time.Second)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("notify", 0, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/hook"))}))
	done := make(chan nsmantest.Result, 1)
	go func() { done <- env.Sweep(t, "-l", caseLabel+"="+ns) }()
	recv.WaitArrivals(t, 1)
	return ns, done
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
// started while its action is under way (the two sweeps overlap in time)
// leaves it alone, and no two deliveries of one firing overlap.
func TestClaimOutlivesAnActionReachedLate(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	recv.SetHold(4 * time.Second)
	// With one manager at a time, "late" is reached 12 s into the sweep,
	// past a 10 s --claim-ttl counted from the sweep's start.
	names := []string{"a-slow-1", "a-slow-2", "a-slow-3", "b-late"}
	for _, name := range names {
		createManager(t, managerObj(ns, name, ns, []any{ttlPolicy("notify", 0, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/"+name))}, targeting(ns)))
	}
	sweepArgs := []string{"-l", caseLabel + "=" + ns, "--concurrency", "1", "--claim-ttl", "10s"}

	spans := nsmantest.NewSpans()
	firstConfig, secondConfig := spans.Kubeconfig(t, e, "first"), spans.Kubeconfig(t, e, "second")
	first := make(chan nsmantest.Result, 1)
	go func() { first <- e.Sweep(t, append([]string{"--kubeconfig", firstConfig}, sweepArgs...)...) }()
	recv.WaitArrivals(t, len(names)) // the late manager's webhook is under way
	second := e.Sweep(t, append([]string{"--kubeconfig", secondConfig}, sweepArgs...)...)
	if got := second.Entry(t, ns, "b-late"); got.State != report.StateBusy {
		t.Errorf("second sweep: late manager %s (%s), want busy while the first sweep's action is under way", got.State, got.Message)
	}
	res := <-first
	spans.Check(t)
	wantCode(t, res, 0)
	for _, name := range names {
		wantState(t, res, ns, name, report.StateFired)
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
	setClaim(t, ns, ns, time.Now().Add(liveClaimFor), got.UID)
	// The spec changes while the claiming sweep acts: a new generation.
	edit := []byte(`{"spec":{"policies":[{"name":"delete at once","condition":{"type":"TTL","params":{"ttlSeconds":1}},"action":{"type":"DELETE"}}]}}`)
	if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, edit, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if gen := e.Manager(t, ns, ns).GetGeneration(); gen < 2 {
		t.Fatalf("generation %d after a spec edit", gen)
	}

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	busy := wantState(t, res, ns, ns, report.StateBusy)
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
	setup(t)
	ns, done := sweepWithWebhookUnderWay(t)
	during := managerStatus(t, ns, ns)
	res := <-done
	wantCode(t, res, 0)
	wantState(t, res, ns, ns, report.StateFired)

	if c := condition(during); during.State != status.StateActing || c.Status != metav1.ConditionFalse || c.Reason != "InProgress" {
		t.Errorf("while the action ran: state %q, Fired=%s (%s), want acting, False (InProgress)", during.State, c.Status, c.Reason)
	}
	if during.LastAction != nil {
		t.Errorf("while the action ran: lastAction %+v, want none before the first action ends", during.LastAction)
	}
	if during.Claim == nil || during.Claim.Sweep == "" {
		t.Errorf("while the action ran: no claim in %+v", during)
	}
	after := managerStatus(t, ns, ns)
	if c := condition(after); after.State != report.StateFired || c.Status != metav1.ConditionTrue {
		t.Errorf("after the action: state %q, Fired=%s, want fired, True", after.State, c.Status)
	}
	if after.LastAction == nil || after.LastAction.Result != report.ResultSucceeded {
		t.Errorf("after the action: lastAction %+v, want succeeded", after.LastAction)
	}
	if after.Claim != nil {
		t.Errorf("after the action: claim %+v left", after.Claim)
	}
}

// A DELETE is its own claim: a manager that deletes the namespace it lives
// in costs one write, the DELETE, and goes with the namespace, Events and
// all; one that deletes another namespace adds only its record, its Event
// and its deactivation, after the DELETE.
func TestADeleteIsItsOwnClaim(t *testing.T) {
	e := setup(t)
	own, other := shared.Namespace(t), shared.Namespace(t)
	caseID := own
	createManager(t, managerObj(own, own, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	// A manager in a trusted namespace that deletes another namespace.
	trusted := nsmantest.ServiceAccountNamespace
	createManager(t, managerObj(trusted, other, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(trusted).Delete(context.Background(), other, metav1.DeleteOptions{})
	})

	before := len(e.Writes(t))
	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	wantState(t, res, own, own, report.StateFired)
	wantState(t, res, trusted, other, report.StateFired)
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
		own:   {"delete namespaces"},
		other: {"delete namespaces", "patch namespacemanagers/status", "patch namespacemanagers", "create events"},
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
	if st := managerStatus(t, trusted, other); st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.Claim != nil {
		t.Errorf("the manager of another namespace: lastAction %+v, claim %+v; want succeeded and no claim", st.LastAction, st.Claim)
	}

	// The manager in the namespace being deleted is left alone until it
	// goes: no write, however often it is swept.
	before = len(e.Writes(t))
	again := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, again, 0)
	if got, ok := again.Lookup(own, own); ok && got.State != report.StateTargetTerminating {
		t.Errorf("next sweep: %s (%s), want target-terminating until the manager is gone", got.State, got.Message)
	}
	if w := e.Writes(t)[before:]; len(w) > 0 {
		t.Errorf("next sweep wrote %v", w)
	}
}

// What makes a DELETE its own claim, on the real API server: a namespace
// DELETE preconditioned on the UID and the resourceVersion listed succeeds
// once; the next one with the same preconditions is refused 409 Conflict
// (the first changed the namespace), while a plain DELETE of the namespace,
// terminating now, is answered 200. A finalizer keeps it terminating.
func TestPreconditionedDeleteSucceedsOnce(t *testing.T) {
	ns := shared.Namespace(t)
	keepTerminating(t, ns)
	listed, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asListed := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &listed.UID, ResourceVersion: &listed.ResourceVersion}}
	if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), ns, asListed); err != nil {
		t.Fatalf("first DELETE as listed: %v", err)
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), ns, asListed); !apierrors.IsConflict(err) {
		t.Errorf("second DELETE as listed: %v, want 409 Conflict", err)
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Errorf("plain DELETE of the terminating namespace: %v, want 200", err)
	}
	now, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil || now.DeletionTimestamp == nil || now.UID != listed.UID {
		t.Errorf("namespace after the DELETEs: %+v (%v), want the same one, terminating", now.ObjectMeta, err)
	}
}

// A namespace changed after the sweep listed it is deleted at its new
// version when the change leaves the decision standing (another
// annotation), and left to the next sweep when it does not (a hold written
// meanwhile): the DELETE as listed is refused, the namespace read again.
func TestDeleteRereadsANamespaceChangedSinceListed(t *testing.T) {
	e := setup(t)
	annotated, held := shared.Namespace(t), shared.Namespace(t)
	caseID := annotated
	for _, ns := range []string{annotated, held} {
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	}
	// Before the sweep's first DELETE reaches the API server, after it
	// listed the namespaces, each namespace is annotated: one with a note,
	// one with a hold.
	var once sync.Once
	kubeconfig := e.KubeconfigThrough(t, func(rp *httputil.ReverseProxy) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				once.Do(func() {
					for ns, key := range map[string]string{annotated: "nsman.test/note", held: status.HoldAnnotation} {
						patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
						if _, err := shared.Admin.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
							t.Error(err)
						}
					}
				})
			}
			rp.ServeHTTP(w, r)
		})
	})
	before := len(e.Writes(t))
	res := e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	wantState(t, res, annotated, annotated, report.StateFired)
	deletes := map[string][]int{}
	for _, w := range e.Writes(t)[before:] {
		if w.Verb == "delete" && w.Resource == "namespaces" {
			deletes[w.Name] = append(deletes[w.Name], w.Code)
		}
	}
	if want := map[string][]int{annotated: {409, 200}, held: {409}}; fmt.Sprint(deletes) != fmt.Sprint(want) {
		t.Errorf("DELETEs by namespace and answer %v, want %v: refused as listed, then once at the new version where the decision stands", deletes, want)
	}
	if got := wantState(t, res, held, held, report.StateBusy); !strings.Contains(got.Message, "changed since this sweep listed it") {
		t.Errorf("held meanwhile: %q", got.Message)
	}
	if !e.NamespaceGoneOrTerminating(t, annotated) || e.NamespaceGoneOrTerminating(t, held) {
		t.Errorf("deleted: %s %v, %s %v; want the first only", annotated, e.NamespaceGoneOrTerminating(t, annotated), held, e.NamespaceGoneOrTerminating(t, held))
	}
	next := e.Sweep(t, "-l", caseLabel+"="+caseID)
	if got := wantState(t, next, held, held, report.StateWaiting); got.HeldUntil == nil {
		t.Errorf("next sweep: %q, want held", got.Message)
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
func claimStatus(generation int64, claim status.Claim) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{
		"observedGeneration": generation, "state": status.StateActing, "claim": claim,
	}})
}

// The record of an action's outcome is written only while the claim is the
// acting sweep's own: a claim that another sweep holds by then (here put in
// place by hand while the action runs) is never overwritten, and the acting
// sweep says why it did not record.
func TestRecordNeverOverwritesAnotherSweepsClaim(t *testing.T) {
	e := setup(t)
	ns, done := sweepWithWebhookUnderWay(t)
	other := status.Claim{Policy: "notify", Action: "WEBHOOK", Sweep: "other-sweep", Expires: time.Now().Add(liveClaimFor).UTC(), Generation: e.Manager(t, ns, ns).GetGeneration()}
	patch, err := claimStatus(other.Generation, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	got := wantState(t, res, ns, ns, report.StateFailed)
	if !strings.Contains(got.Message, "changed since this sweep claimed it") {
		t.Errorf("message %q does not say the claim was lost", got.Message)
	}
	st := managerStatus(t, ns, ns)
	if st.Claim == nil || st.Claim.Sweep != "other-sweep" || st.LastAction != nil {
		t.Errorf("status %+v: the other sweep's claim was overwritten", st)
	}
	if e.Deactivated(t, ns, ns) {
		t.Error("deactivated by a sweep that lost its claim")
	}
}

// A live claim holds a manager whatever else a sweep would say of it: a
// sweep run with other flags, for which the manager is forbidden, leaves
// the claim in place rather than recording over it.
func TestLiveClaimOutranksEveryVerdict(t *testing.T) {
	e := setup(t)
	home := nsmantest.ServiceAccountNamespace
	target := shared.Namespace(t)
	createManager(t, managerObj(home, target, target, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Delete(context.Background(), target, metav1.DeleteOptions{})
	})
	setClaim(t, home, target, time.Now().Add(liveClaimFor), "")

	// namespace-manager is not trusted by this sweep: it would refuse the
	// manager.
	res := e.Sweep(t, "-l", caseLabel+"="+target, "--trusted-namespaces", "elsewhere")
	wantCode(t, res, 0)
	wantState(t, res, home, target, report.StateBusy)
	if st := managerStatus(t, home, target); st.Claim == nil || st.Claim.Sweep != "dead-sweep" {
		t.Errorf("status %+v: the live claim was written over", st)
	}
}

// The expired claim of a dead sweep is completed, never dropped: one that
// --max-actions defers stays for the next sweep, which completes it.
func TestDeferredCompletionKeepsTheClaim(t *testing.T) {
	e := setup(t)
	first, second := shared.Namespace(t), shared.Namespace(t)
	caseID := first
	for _, ns := range []string{first, second} {
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
		got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setClaim(t, ns, ns, time.Now().Add(-time.Minute), got.UID)
	}
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--max-actions", "1")
	wantCode(t, res, 0)
	if got := res.Report.Summary.States; got[report.StateFired] != 1 || got[report.StateDeferred] != 1 {
		t.Fatalf("states %v, want 1 fired and 1 deferred", got)
	}
	deferred := first
	if res.Entry(t, second, second).State == report.StateDeferred {
		deferred = second
	}
	if st := managerStatus(t, deferred, deferred); st.Claim == nil || st.Claim.Sweep != "dead-sweep" {
		t.Errorf("deferred manager's status %+v: the dead sweep's claim was dropped", st)
	}
	res = e.Sweep(t, "-l", caseLabel+"="+caseID)
	got := wantState(t, res, deferred, deferred, report.StateFired)
	if !strings.Contains(got.Message, "expired claim of sweep dead-sweep") {
		t.Errorf("message %q, want the dead sweep's claim completed", got.Message)
	}
}

// Two managers that delete one namespace in one sweep: the first DELETE
// succeeds, the second finds the namespace changed since it was listed
// (terminating, a finalizer holds it), leaves it to the next sweep and
// records nothing, rather than failing or taking it for a namespace
// recreated; the next sweep finds it terminating.
func TestDeleteOfATerminatingNamespace(t *testing.T) {
	e := setup(t)
	home := nsmantest.ServiceAccountNamespace
	target := shared.Namespace(t)
	keepTerminating(t, target)
	names := []string{"a-" + target, "b-" + target}
	for _, name := range names {
		createManager(t, managerObj(home, name, target, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
		t.Cleanup(func() {
			_ = e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	res := e.Sweep(t, "-l", caseLabel+"="+target, "--concurrency", "1")
	wantCode(t, res, 0)
	wantState(t, res, home, names[0], report.StateFired)
	if got := wantState(t, res, home, names[1], report.StateBusy); len(got.Effects) != 0 || !strings.Contains(got.Message, "namespace "+target+" changed since this sweep listed it") {
		t.Errorf("second DELETE: %q, effects %q; want left to the next sweep", got.Message, got.Effects)
	}
	if st := managerStatus(t, home, names[1]); st.LastAction != nil || st.Claim != nil {
		t.Errorf("second manager recorded %+v", st.Progress)
	}
	if !e.NamespaceGoneOrTerminating(t, target) {
		t.Error("namespace not terminating")
	}
	next := e.Sweep(t, "-l", caseLabel+"="+target)
	wantState(t, next, home, names[1], report.StateTargetTerminating)
}

// A DELETE recorded as failed without an answer is done once its namespace
// went (the answer was lost, not the delete); one the API server refused is
// not, whoever deleted the namespace since.
func TestLostDeleteAnswerIsConfirmedOnlyWhenUncertain(t *testing.T) {
	e := setup(t)
	home := nsmantest.ServiceAccountNamespace
	lost, refused := shared.Namespace(t), shared.Namespace(t)
	caseID := lost
	for _, target := range []string{lost, refused} {
		createManager(t, managerObj(home, target, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
		t.Cleanup(func() {
			_ = e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Delete(context.Background(), target, metav1.DeleteOptions{})
		})
		last := status.LastAction{Policy: "delete at once", Action: "DELETE", Result: report.ResultFailed, Time: time.Now().UTC(), Uncertain: target == lost}
		status, err := json.Marshal(map[string]any{"status": status.Status{Progress: status.Progress{ObservedGeneration: e.Manager(t, home, target).GetGeneration(), LastAction: &last}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Patch(t.Context(), target, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), target, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if !managerStatus(t, home, lost).LastAction.Uncertain {
		t.Fatal("the CRD dropped lastAction.uncertain")
	}
	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	if got := wantState(t, res, home, lost, report.StateFired); !strings.Contains(got.Message, "answer was lost") {
		t.Errorf("lost answer: message %q", got.Message)
	}
	if got, _ := res.Lookup(home, refused); got.State == report.StateFired {
		t.Errorf("a refused DELETE was confirmed by someone else's delete: %+v", got)
	}
}

// A rule's DELETE recorded as failed without an answer is confirmed, as a
// manager's is, once its namespace is going: the rule matches that
// terminating namespace for it alone, reports the pair fired, tells it in
// its Event, and records the DELETE as done, after which it leaves the
// namespace alone. A DELETE refused, whoever deleted the namespace since,
// is not confirmed, and its namespace not matched.
func TestRuleLostDeleteAnswerIsConfirmed(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	matched := labelled(t, home, 2)
	lost, refused := matched[0], matched[1]
	createManager(t, managerObj(home, "gone", home, []any{ttlPolicy("delete at once", 3600, deleteAction)}, selecting(home)))
	rule := e.Manager(t, home, "gone")
	m, _ := policy.Parse(rule)
	key := status.PairAnnotation(rule.GetUID())
	for _, ns := range []string{lost, refused} {
		keepTerminating(t, ns)
		last := status.LastAction{Policy: "delete at once", Action: "DELETE", Result: report.ResultFailed, Time: time.Now().UTC(), Uncertain: ns == lost}
		raw, _ := json.Marshal(status.PairStatus{Rule: home + "/gone", Spec: m.Arming, Progress: status.Progress{ObservedGeneration: rule.GetGeneration(), LastAction: &last}})
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: string(raw)}}})
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "gone", lost); p.State != report.StateFired || !strings.Contains(p.Message, "answer was lost") {
		t.Errorf("lost answer: %q (%s), want fired, the answer lost", p.State, p.Message)
	}
	for _, p := range res.Report.Entries {
		if p.Rule && p.Name == "gone" && p.Target == refused {
			t.Errorf("refused DELETE: the rule matched the terminating namespace: %+v", p)
		}
	}
	if st, _ := pairRecord(t, lost, rule.GetUID()); st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.LastAction.Uncertain {
		t.Errorf("record on %s after the confirmation: %+v, want the DELETE done", lost, st.LastAction)
	}
	events, err := shared.Admin.EventsV1().Events(home).List(t.Context(), metav1.ListOptions{FieldSelector: "regarding.name=gone"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || !strings.Contains(events.Items[0].Note, "acted on 1 namespace(s): "+lost) {
		t.Errorf("events on the rule: %+v, want one telling the confirmed DELETE", events.Items)
	}
	again := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	for _, p := range again.Report.Entries {
		if p.Rule && p.Name == "gone" && p.Target != "" {
			t.Errorf("next sweep matched %s (%s), want no namespace", p.Target, p.State)
		}
	}
}

// keepTerminating keeps namespace ns terminating once deleted, until the
// test ends: a ConfigMap in it holds a finalizer nobody removes.
func keepTerminating(t *testing.T, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{"nsman.test/held"}}}
	if _, err := shared.Admin.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = shared.Admin.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}
