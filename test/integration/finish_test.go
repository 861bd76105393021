package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// A manager whose record says its action succeeded under the current
// generation, but which is not deactivated (the deactivation was lost, or
// the record written by a sweep that died before it), is only deactivated
// by the next sweep: no second webhook, and no second report of the action
// fired (the sweep that acted made that one), but deactivated; its status
// still says the action fired.
func TestRecordWithoutDeactivationIsFinished(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("notify at once", 0, webhookAction(recv.URL+"/hook"))}))
	gen := e.Manager(t, ns, ns).GetGeneration()
	status, err := json.Marshal(map[string]any{"status": status.Status{Progress: status.Progress{
		ObservedGeneration: gen,
		LastAction:         &status.LastAction{Policy: "notify at once", Action: "WEBHOOK", Result: report.ResultSucceeded, Time: time.Now().UTC()},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}

	res := e.Sweep(t, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	if got := wantState(t, res, ns, ns, report.StateDeactivated); len(got.Effects) != 1 || !strings.Contains(got.Effects[0], "nothing left to do") {
		t.Errorf("effects %q, want nothing done: the action was done before", got.Effects)
	}
	if st := managerStatus(t, ns, ns); st.State != report.StateFired || condition(st).Status != metav1.ConditionTrue {
		t.Errorf("status %s, condition %+v; want fired", st.State, condition(st))
	}
	if n := len(recv.Deliveries()); n != 0 {
		t.Errorf("%d webhooks sent for an action already recorded as done", n)
	}
	if !e.Deactivated(t, ns, ns) {
		t.Error("manager not deactivated")
	}
}
