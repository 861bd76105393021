package integration

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// staleRecord is the record of a rule, acted on long before
// record.StaleRecordAge ago.
func staleRecord(t *testing.T, rule string) string {
	t.Helper()
	data, err := json.Marshal(status.PairStatus{Rule: rule, Progress: status.Progress{ObservedGeneration: 1,
		LastAction: &status.LastAction{Policy: "now", Action: policy.ActionWebhook, Result: report.ResultSucceeded, Time: time.Now().Add(-2 * record.StaleRecordAge).UTC()}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// annotateNamespace merges annotations into namespace ns, as its tenant may.
func annotateNamespace(t *testing.T, ns string, annotations map[string]string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// staleSweep is a sweep that lists every manager (-l with a rule, which
// selects no namespace here) and so removes the records of rules that are
// gone; it returns the result and the namespaces nsman patched meanwhile,
// with how many patches each.
func staleSweep(t *testing.T, e *nsmantest.Env, home string) (nsmantest.Result, map[string]int) {
	t.Helper()
	before, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Sweep(t, "-l", caseLabel+"="+home, "--trusted-namespaces", home)
	wantCode(t, res, 0)
	after, err := shared.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	patched := map[string]int{}
	for _, r := range after[len(before):] {
		if r.Verb == "patch" && r.Resource == "namespaces" && r.APIGroup == "" {
			patched[r.Name]++
		}
	}
	return res, patched
}

// TestStaleRecordsOnePatchPerNamespace: whoever may annotate a namespace
// can write any number of records of rules that do not exist. A sweep
// removes all of a namespace's with one patch, and patches at most
// record.MaxStaleNamespaces namespaces; the report says how many records
// it left, which the next sweep removes.
func TestStaleRecordsOnePatchPerNamespace(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	recv := nsmantest.NewReceiver(t)
	createManager(t, managerObj(home, "standing", home, []any{ttlPolicy("now", 0, webhookAction(recv.URL+"/standing"))}, selecting(home)))
	// Whatever other cases left stale goes first.
	for range 10 {
		if res, _ := staleSweep(t, e, home); res.Report.Summary.StaleRecordsLeft == 0 {
			break
		}
	}

	// 300 records on one namespace: one patch.
	bogus := shared.Namespace(t)
	records := map[string]string{}
	for i := range 300 {
		records[status.PairAnnotationPrefix+fmt.Sprintf("0f0e0d0c-bogus-%03d", i)] = staleRecord(t, home+"/bogus")
	}
	annotateNamespace(t, bogus, records)
	res, patched := staleSweep(t, e, home)
	if patched[bogus] != 1 || res.Report.Summary.StaleRecords != len(records) {
		t.Errorf("%d patches of namespace %s, summary.staleRecords %d; want 1 patch removing %d records", patched[bogus], bogus, res.Report.Summary.StaleRecords, len(records))
	}
	_, ns := pairRecord(t, bogus, "")
	for key := range records {
		if _, ok := ns.Annotations[key]; ok {
			t.Errorf("namespace %s still has %s", bogus, key)
			break
		}
	}

	// One namespace more than a sweep cleans: the rest waits for the next.
	var many []string
	for i := range record.MaxStaleNamespaces + 1 {
		ns := shared.Namespace(t)
		annotateNamespace(t, ns, map[string]string{status.PairAnnotationPrefix + fmt.Sprintf("0f0e0d0c-gone-%02d", i): staleRecord(t, home+"/gone")})
		many = append(many, ns)
	}
	left := func() []string {
		var out []string
		for _, name := range many {
			_, ns := pairRecord(t, name, "")
			if slices.ContainsFunc(slices.Collect(maps.Keys(ns.Annotations)), func(key string) bool { return strings.HasPrefix(key, status.PairAnnotationPrefix) }) {
				out = append(out, name)
			}
		}
		return out
	}
	res, patched = staleSweep(t, e, home)
	if len(patched) != record.MaxStaleNamespaces || res.Report.Summary.StaleRecordsLeft != 1 || res.Report.Summary.StaleRecords != record.MaxStaleNamespaces {
		t.Errorf("first sweep: %d namespaces patched, summary.staleRecords %d, staleRecordsLeft %d; want %d, %d and 1",
			len(patched), res.Report.Summary.StaleRecords, res.Report.Summary.StaleRecordsLeft, record.MaxStaleNamespaces, record.MaxStaleNamespaces)
	}
	if got := left(); len(got) != 1 {
		t.Errorf("first sweep left records on %v, want one namespace", got)
	}
	res, patched = staleSweep(t, e, home)
	if len(patched) != 1 || res.Report.Summary.StaleRecords != 1 || res.Report.Summary.StaleRecordsLeft != 0 {
		t.Errorf("second sweep: %d namespaces patched, summary.staleRecords %d, staleRecordsLeft %d; want 1, 1 and 0",
			len(patched), res.Report.Summary.StaleRecords, res.Report.Summary.StaleRecordsLeft)
	}
	if got := left(); len(got) != 0 {
		t.Errorf("second sweep left records on %v", got)
	}
}
