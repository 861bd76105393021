package integration

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// dueIn is the ttlSeconds that makes namespace ns due in d.
func dueIn(t *testing.T, ns string, d time.Duration) int64 {
	t.Helper()
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return int64((time.Since(got.CreationTimestamp.Time) + d).Seconds())
}

// warnedBefore gives policy p warnBefore thresholds.
func warnedBefore(p map[string]any, thresholds ...any) map[string]any {
	p["warnBefore"] = thresholds
	return p
}

// dueSoon are the dueSoon notifications recv got, by target; it got no
// other.
func dueSoon(t *testing.T, recv *nsmantest.Receiver) map[string][]tell.Notification {
	t.Helper()
	got := map[string][]tell.Notification{}
	for _, n := range notifications(t, recv) {
		if n.Event != tell.EventDueSoon {
			t.Errorf("notification %+v: event %q, want %q", n, n.Event, tell.EventDueSoon)
		}
		got[n.Target] = append(got[n.Target], n)
	}
	return got
}

// notifications are the notifications recv got, in order.
func notifications(t *testing.T, recv *nsmantest.Receiver) []tell.Notification {
	t.Helper()
	var out []tell.Notification
	for _, d := range recv.Deliveries() {
		var n tell.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		out = append(out, n)
	}
	return out
}

// TestWarnBefore: a manager and a rule's namespace, each due in 90 s with
// warnBefore 1m, are warned by no sweep at first, by a dry run planned
// only, then by four sweeps at once exactly once each (a dueSoon
// notification with the due time, a DueSoon Event), by the next sweep not
// again, and once more when a hold moves the due time.
func TestWarnBefore(t *testing.T) {
	e := setup(t)
	managed, home := shared.Namespace(t), shared.Namespace(t)
	caseID := managed
	paired := labelled(t, home, 1)[0]
	createManager(t, managerObj(managed, managed, caseID, []any{warnedBefore(ttlPolicy("delete soon", dueIn(t, managed, 90*time.Second), deleteAction), "1m")}))
	createManager(t, managerObj(home, "leftovers", caseID, []any{warnedBefore(ttlPolicy("delete soon", dueIn(t, paired, 90*time.Second), deleteAction), "1m")}, selecting(home)))
	recv := nsmantest.NewReceiver(t)
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--notify-url", recv.URL + "/nsman"}

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	if w := wantState(t, res, managed, managed, report.StateWaiting).Warning; w != nil || len(recv.Deliveries()) != 0 {
		t.Fatalf("warned 90 s before with warnBefore 1m: %+v, %d deliveries", w, len(recv.Deliveries()))
	}
	time.Sleep(35 * time.Second)

	res = e.Sweep(t, append(args, "--dry-run")...)
	if w := res.Entry(t, managed, managed).Warning; w == nil || w.State != report.StatePlanned || w.Before != "1m" || len(recv.Deliveries()) != 0 {
		t.Fatalf("dry run: warning %+v, %d deliveries; want one planned and none sent", w, len(recv.Deliveries()))
	}

	sweepsAtOnce(t, caseID, "--trusted-namespaces", home, "--notify-url", recv.URL+"/nsman")
	got := dueSoon(t, recv)
	if len(got[managed]) != 1 || len(got[paired]) != 1 || len(recv.Deliveries()) != 2 {
		t.Fatalf("four sweeps at once: %d deliveries %v, want one dueSoon for %s and one for %s", len(recv.Deliveries()), got, managed, paired)
	}
	n := got[managed][0]
	if n.Due == nil || n.Action != "DELETE" || n.Policy != "delete soon" || n.Result != tell.ResultPending || time.Until(*n.Due) > time.Minute || time.Until(*n.Due) < 0 {
		t.Errorf("dueSoon notification %+v", n)
	}
	wantEvent(t, managed, managed, tell.DueSoon)
	wantEvent(t, home, "leftovers", tell.DueSoon)

	res = e.Sweep(t, args...)
	if w := res.Entry(t, managed, managed).Warning; w != nil || len(recv.Deliveries()) != 2 {
		t.Fatalf("the next sweep: warning %+v, %d deliveries, want none and still 2", w, len(recv.Deliveries()))
	}

	// A hold that ends after the due time moves it there: warned again.
	until := n.Due.Add(3 * time.Second).UTC().Format(time.RFC3339)
	annotateNamespace(t, managed, map[string]string{status.HoldAnnotation: until})
	res = e.Sweep(t, args...)
	if w := res.Entry(t, managed, managed).Warning; w == nil || w.State != report.StateFired || w.Due.Format(time.RFC3339) != until {
		t.Fatalf("after a hold until %s: warning %+v; entry %+v", until, w, res.Entry(t, managed, managed))
	}
	if got := dueSoon(t, recv); len(got[managed]) != 2 || len(got[paired]) != 1 {
		t.Errorf("after the hold moved the due time: %v, want a second dueSoon for %s only", got, managed)
	}
}

// wantEvent fails unless the manager ns/name has an Event of reason.
func wantEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	if countEvents(t, ns, name, reason) == 0 {
		t.Errorf("no %s Event on %s/%s", reason, ns, name)
	}
}

// TestWarnTwoPolicies: a manager whose two policies warn an hour before
// they act, a WEBHOOK stage due in 20 s and a DELETE due in 30 min, is
// warned by three sweeps of the stage alone, once (one dueSoon
// notification, one DueSoon Event); once the stage fired, of the DELETE,
// once. Before, each sweep warned of the other policy than the last, and
// overwrote the record of it: a warning every sweep.
func TestWarnTwoPolicies(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	hooks, recv := nsmantest.NewReceiver(t), nsmantest.NewReceiver(t)
	stage := warnedBefore(ttlPolicy("call first", dueIn(t, ns, 20*time.Second), webhookAction(hooks.ServiceURL(t, shared.Admin, ns, "sink")+"/hook")), "1h")
	stage["final"] = false
	createManager(t, managerObj(ns, ns, ns, []any{stage, warnedBefore(ttlPolicy("delete then", dueIn(t, ns, 30*time.Minute), deleteAction), "1h")}))
	args := []string{"-l", caseLabel + "=" + ns, "--notify-url", recv.URL + "/nsman"}
	// told says, in order, the policies the dueSoon notifications named
	// (the stage's firing is notified too).
	told := func() []string {
		var out []string
		for _, n := range notifications(t, recv) {
			if n.Event == tell.EventDueSoon {
				out = append(out, n.Policy)
			}
		}
		return out
	}

	for range 3 {
		wantCode(t, e.Sweep(t, args...), 0)
	}
	got := dueSoon(t, recv)[ns]
	if len(got) != 1 || got[0].Policy != "call first" || countEvents(t, ns, ns, tell.DueSoon) != 1 {
		t.Fatalf("three sweeps warned of %v, with %d DueSoon Events; want of %q once", told(), countEvents(t, ns, ns, tell.DueSoon), "call first")
	}

	time.Sleep(time.Until(*got[0].Due) + time.Second)
	if entry := wantState(t, e.Sweep(t, args...), ns, ns, report.StateFired); entry.Policy != "call first" || entry.Warning != nil {
		t.Fatalf("the stage's due time passed: %+v", entry)
	}
	for range 2 {
		wantCode(t, e.Sweep(t, args...), 0)
	}
	if got, events := told(), countEvents(t, ns, ns, tell.DueSoon); len(got) != 2 || got[1] != "delete then" || events != 2 || len(hooks.Deliveries()) != 1 {
		t.Errorf("once the stage fired (%d deliveries), two sweeps more: warned of %v, %d DueSoon Events; want of %q once more", len(hooks.Deliveries()), got, events, "delete then")
	}
}

// countEvents is the number of Events of reason on the manager ns/name.
func countEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	events, err := shared.Admin.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: fmt.Sprintf("involvedObject.name=%s,reason=%s", name, reason)})
	if err != nil {
		t.Fatal(err)
	}
	return len(events.Items)
}
