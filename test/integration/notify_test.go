package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestNotifications: with --notify-url, every action that fired or failed
// is told once (json by default, slack on request), nothing for waiting
// managers or a dry run; a notification that fails changes neither the
// outcome nor the exit code, and is counted.
func TestNotifications(t *testing.T) {
	e := setup(t)
	del, hook, idle := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := del
	refusing := nsmantest.NewReceiver(t)
	refusing.SetStatus(400)
	createManager(t, managerObj(del, del, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	createManager(t, managerObj(hook, hook, caseID, []any{ttlPolicy("report at once", 0, webhookAction(refusing.URL+"/hook"))}))
	createManager(t, managerObj(idle, idle, caseID, []any{ttlPolicy("in an hour", 3600, deleteAction)}))
	notify := nsmantest.NewReceiver(t)
	args := []string{"-l", caseLabel + "=" + caseID, "--notify-url", notify.URL + "/nsman"}

	if res := e.Sweep(t, append(args, "--dry-run")...); res.Report.Summary.Notifications != nil || len(notify.Deliveries()) != 0 {
		t.Fatalf("a dry run notified: %v, %d deliveries", res.Report.Summary.Notifications, len(notify.Deliveries()))
	}
	res := e.Sweep(t, args...)
	wantCode(t, res, 1) // the webhook failed
	got := map[string]sweep.Notification{}
	keys := map[string]bool{}
	for _, d := range notify.Deliveries() {
		var n sweep.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		got[n.Target] = n
		keys[d.Header.Get("Idempotency-Key")] = true
	}
	if len(got) != 2 || len(keys) != 2 || len(notify.Deliveries()) != 2 {
		t.Fatalf("notifications %+v, want one for %s and one for %s", got, del, hook)
	}
	if n := got[del]; n.Result != sweep.ResultSucceeded || n.Action != "DELETE" || n.Policy != "delete at once" || n.Manager.Name != del || n.Sweep == "" || n.Version == "" || len(n.Effects) != 1 {
		t.Errorf("DELETE notification %+v", n)
	}
	if n := got[hook]; n.Result != sweep.ResultFailed || n.Action != "WEBHOOK" || !strings.Contains(n.Message, "400") {
		t.Errorf("failed WEBHOOK notification %+v", n)
	}
	if s := res.Report.Summary.Notifications; s["sent"] != 2 || s["failed"] != 0 {
		t.Errorf("summary notifications %v, want 2 sent", s)
	}
	// The webhook fails again: a failure is told once.
	res = e.Sweep(t, args...)
	wantState(t, res, hook, hook, sweep.StateFailed)
	if n := len(notify.Deliveries()); n != 2 {
		t.Errorf("%d notifications after the same failure again, want still 2", n)
	}

	// slack, and a receiver that refuses: the outcome stands.
	slackDue := shared.Namespace(t)
	createManager(t, managerObj(slackDue, slackDue, slackDue, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	res = e.Sweep(t, "-l", caseLabel+"="+slackDue, "--notify-url", refusing.URL+"/slack", "--notify-format", "slack")
	wantCode(t, res, 0)
	wantState(t, res, slackDue, slackDue, sweep.StateFired)
	if s := res.Report.Summary.Notifications; s["failed"] != 1 {
		t.Errorf("summary notifications %v, want 1 failed", s)
	}
	var slack []nsmantest.Delivery
	for _, d := range refusing.Deliveries() {
		if d.Path == "/slack" {
			slack = append(slack, d)
		}
	}
	var body map[string]string
	if len(slack) == 0 || json.Unmarshal(slack[0].Body, &body) != nil || !strings.HasPrefix(body["text"], "nsman: DELETE of namespace "+slackDue) {
		t.Errorf("slack body: %d deliveries, %v", len(slack), body)
	}
}

// TestNotificationsUnderConcurrentSweeps: four sweeps at once over six due
// managers, overlapping in time, tell each outcome exactly once.
func TestNotificationsUnderConcurrentSweeps(t *testing.T) {
	e := setup(t)
	caseID := ""
	hooks := nsmantest.NewReceiver(t)
	for i := range 6 {
		ns := shared.Namespace(t)
		if caseID == "" {
			caseID = ns
		}
		createManager(t, managerObj(ns, ns, caseID, []any{ttlPolicy("report at once", 0, webhookAction(hooks.URL+fmt.Sprintf("/%d", i)))}))
	}
	notify := nsmantest.NewReceiver(t)
	var wg sync.WaitGroup
	spans := nsmantest.NewSpans().StartTogether(4)
	for i := range 4 {
		kubeconfig := spans.Kubeconfig(t, e, fmt.Sprint(i))
		wg.Go(func() {
			e.Sweep(t, "--kubeconfig", kubeconfig, "-l", caseLabel+"="+caseID, "--notify-url", notify.URL+"/nsman")
		})
	}
	wg.Wait()
	spans.Check(t)
	perKey := map[string]int{}
	for _, d := range notify.Deliveries() {
		perKey[d.Header.Get("Idempotency-Key")]++
	}
	if len(perKey) != 6 {
		t.Errorf("%d outcomes told, want 6", len(perKey))
	}
	for k, n := range perKey {
		if n != 1 {
			t.Errorf("outcome %s told %d times", k, n)
		}
	}
}
