package integration

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

func condition(st status.Status) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == status.ConditionFired {
			return c
		}
	}
	return metav1.Condition{}
}

// TestStatusAndEvents checks what a sweep leaves on the managers once it has
// exited: status and Events, each written only when the state changed, the
// record of a DELETE written after it, and nothing for a manager that
// deleted its own namespace, which goes with it.
func TestStatusAndEvents(t *testing.T) {
	e := setup(t)
	home := nsmantest.ServiceAccountNamespace
	waiting, target, own, tenant, other := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := waiting
	fired := "fired-" + target
	createManager(t, managerObj(waiting, waiting, caseID, []any{ttlPolicy("expire in an hour", 3600, deleteAction)}))
	createManager(t, managerObj(home, fired, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
	createManager(t, managerObj(own, own, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	createManager(t, managerObj(tenant, tenant, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(other)))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Delete(context.Background(), fired, metav1.DeleteOptions{})
	})

	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)

	// Waiting: state, target, next due and the condition.
	st := managerStatus(t, waiting, waiting)
	ns, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), waiting, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != report.StateWaiting || st.Target != waiting || st.NextDue == nil || !st.NextDue.Equal(&metav1.Time{Time: ns.CreationTimestamp.Add(time.Hour)}) {
		t.Errorf("waiting manager status %+v", st)
	}
	if c := condition(st); c.Status != metav1.ConditionFalse || c.Reason != "Waiting" || c.ObservedGeneration != st.ObservedGeneration || st.ObservedGeneration == 0 {
		t.Errorf("waiting manager condition %+v (observedGeneration %d)", c, st.ObservedGeneration)
	}
	// Fired: the last action and the condition; the claim is gone.
	st = managerStatus(t, home, fired)
	if c := condition(st); st.State != report.StateFired || c.Status != metav1.ConditionTrue || c.Reason != "Fired" ||
		st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.LastAction.Action != "DELETE" {
		t.Errorf("fired manager status %+v", st)
	}
	if st.Claim != nil || st.LastAction.Policy != "delete at once" || st.ObservedGeneration == 0 {
		t.Errorf("fired manager: claim %+v, lastAction %+v; want no claim and the policy that acted", st.Claim, st.LastAction)
	}
	if !e.Deactivated(t, home, fired) {
		t.Error("fired manager not deactivated")
	}
	// Refused.
	st = managerStatus(t, tenant, tenant)
	if c := condition(st); st.State != report.StateForbidden || c.Reason != "Forbidden" || !strings.Contains(st.Message, "may only target") {
		t.Errorf("refused manager status %+v", st)
	}

	// Events, as the audit log saw them being written.
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	reqs := after[len(before):]
	created := map[string]int{}
	for _, r := range reqs {
		if r.Verb == "create" && r.Resource == "events" && r.Code == 201 {
			created[r.Namespace]++
		}
	}
	// The manager that deleted its own namespace gets no Event: it goes
	// with the namespace.
	if want := map[string]int{home: 1, tenant: 1}; !maps.Equal(created, want) {
		t.Errorf("events created by namespace %v, want %v", created, want)
	}
	// The fired manager: no claim (the DELETE is its own), then the
	// record and the deactivation after the DELETE.
	writes := map[string]int{}
	for _, r := range reqs {
		if r.Verb == "patch" && r.Name == fired {
			writes[r.Resource+"/"+r.Subresource]++
		}
	}
	if want := map[string]int{"namespacemanagers/status": 1, "namespacemanagers/": 1}; !maps.Equal(writes, want) {
		t.Errorf("patches of the fired manager %v, want %v", writes, want)
	}
	recordAt := slices.IndexFunc(reqs, func(r cluster.Request) bool {
		return r.Verb == "patch" && r.Subresource == "status" && r.Name == fired
	})
	deleteAt := slices.IndexFunc(reqs, func(r cluster.Request) bool {
		return r.Verb == "delete" && r.Resource == "namespaces" && r.Name == target
	})
	if deleteAt < 0 || recordAt < deleteAt {
		t.Errorf("delete at request %d, record at %d: want the record after the delete", deleteAt, recordAt)
	}
	events, err := shared.Admin.EventsV1().Events(home).List(t.Context(), metav1.ListOptions{FieldSelector: "regarding.name=" + fired})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Reason != "Fired" || events.Items[0].Type != "Normal" || events.Items[0].Regarding.Kind != "NamespaceManager" {
		t.Errorf("events on %s: %+v", fired, events.Items)
	}
	events, err = shared.Admin.EventsV1().Events(tenant).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Reason != "Forbidden" || events.Items[0].Type != "Warning" {
		t.Errorf("events on the refused manager: %+v", events.Items)
	}

	// Nothing changed: the next sweep writes nothing, events included.
	before = after
	res = e.Sweep(t, "-l", caseLabel+"="+caseID)
	wantCode(t, res, 0)
	after, err = shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range after[len(before):] {
		if r.Verb != "list" && r.Verb != "get" {
			t.Errorf("a sweep with nothing new wrote: %s", r)
		}
	}
}

// TestPrinterColumns checks what kubectl get nsman shows, from the API
// server's table.
func TestPrinterColumns(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("expire in an hour", 3600, deleteAction)}))
	e.Sweep(t, "-l", caseLabel+"="+ns)
	raw, err := shared.Admin.Discovery().RESTClient().Get().
		AbsPath("/apis/k8s.consol.de/v1beta1/namespaces/"+ns+"/namespacemanagers").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	want := []string{"Name", "Deactivated", "State", "Target", "Next Due", "Age"}
	if !slices.Equal(columns, want) {
		t.Fatalf("columns %v, want %v", columns, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[2] != "waiting" || cells[3] != ns || cells[4] == nil {
		t.Errorf("row %v: want state waiting, target %s and a next due time", cells, ns)
	}
}
