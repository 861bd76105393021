package record

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// applyPatch applies a manager patch to obj the way the API server applies a
// JSON merge patch (a status patch to the whole object, as the status
// subresource sees it).
func applyPatch(t *testing.T, obj *unstructured.Unstructured, p write.Patch) *unstructured.Unstructured {
	t.Helper()
	current, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	merged, err := jsonpatch.MergePatch(current, p.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(merged); err != nil {
		t.Fatal(err)
	}
	return out
}

func sampleStatus() status.Status {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return status.Status{
		Progress: status.Progress{
			ObservedGeneration: 4,
			Claim:              &status.Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s1", Expires: at, Generation: 4, TargetUID: "u1"},
			Checks:             map[string]policy.CheckState{"p": {Generation: 4, Passed: 2, Last: at}, "q": {Generation: 4, Passed: 1, Last: at}},
		},
		State:   report.StateWaiting,
		Target:  "ci-123",
		NextDue: &metav1.Time{Time: at},
		Message: "TTL 1h elapses at 2026-01-02T03:04:05Z",
	}
}

func TestStateStoreRoundTrip(t *testing.T) {
	for _, store := range []StatusLocation{{Subresource: false}, {Subresource: true}} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager", "metadata": map[string]any{"name": "m"}}}
		first := sampleStatus()
		p, changed := store.Update(status.Status{}, first, "", false)
		if !changed || (p.Subresource == "status") != store.Subresource {
			t.Fatalf("subresource=%v: changed=%v subresource=%q", store.Subresource, changed, p.Subresource)
		}
		obj = applyPatch(t, obj, p)
		if got := store.Read(listedOf(t, obj)); write.MustJSON(got) != write.MustJSON(first) {
			t.Fatalf("subresource=%v: read %s, want %s", store.Subresource, write.MustJSON(got), write.MustJSON(first))
		}
		// Removing the claim and one of two checks must remove them, not
		// merge them into what is stored.
		second := first
		second.Claim = nil
		second.Checks = map[string]policy.CheckState{"p": first.Checks["p"]}
		second.State = report.StateFired
		p, _ = store.Update(first, second, "", false)
		obj = applyPatch(t, obj, p)
		if got := store.Read(listedOf(t, obj)); write.MustJSON(got) != write.MustJSON(second) {
			t.Errorf("subresource=%v: after update read %s, want %s", store.Subresource, write.MustJSON(got), write.MustJSON(second))
		}
		if _, changed := store.Update(second, second, "", false); changed {
			t.Errorf("subresource=%v: no change, but a patch", store.Subresource)
		}
	}
}

func TestUpdateIsConditionalOnResourceVersion(t *testing.T) {
	for _, store := range []StatusLocation{{Subresource: false}, {Subresource: true}} {
		p, _ := store.Update(status.Status{}, sampleStatus(), "42", false)
		var body map[string]any
		if err := json.Unmarshal(p.Body, &body); err != nil {
			t.Fatal(err)
		}
		if rv := body["metadata"].(map[string]any)["resourceVersion"]; rv != "42" {
			t.Errorf("subresource=%v: resourceVersion %v, want 42", store.Subresource, rv)
		}
	}
}

func TestUpdateDeactivates(t *testing.T) {
	st := sampleStatus()
	// Under the original CRD one patch records and deactivates, even when
	// the record is unchanged.
	p, changed := StatusLocation{}.Update(st, st, "", true)
	if !changed || p.Subresource != "" || !json.Valid(p.Body) {
		t.Fatalf("annotation store: changed=%v subresource=%q", changed, p.Subresource)
	}
	var body struct {
		Spec struct{ Deactivated bool } `json:"spec"`
	}
	_ = json.Unmarshal(p.Body, &body)
	if !body.Spec.Deactivated {
		t.Errorf("annotation store patch %s does not set spec.deactivated", p.Body)
	}
	if d := deactivatePatch(); d.Subresource != "" || string(d.Body) != `{"spec":{"deactivated":true}}` {
		t.Errorf("deactivatePatch = %q %s", d.Subresource, d.Body)
	}
}

// A record's next status must not share its conditions with the stored one,
// or the update would see no change in them.
func TestUpdateSeesAConditionChange(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var stored status.Status
	stored.Observe(report.Entry{State: report.StateWaiting, Target: "ns", Message: "waiting"}, 1, t1)
	next := stored.Clone()
	next.Observe(report.Entry{State: report.StateFired, Target: "ns", Message: "done"}, 1, t1.Add(time.Minute))
	if stored.Conditions[0].Status != metav1.ConditionFalse {
		t.Fatal("observing the next status changed the stored one")
	}
	for _, store := range []StatusLocation{{Subresource: false}, {Subresource: true}} {
		p, changed := store.Update(stored, next, "", false)
		if !changed || !strings.Contains(string(p.Body), "conditions") || !strings.Contains(string(p.Body), "True") {
			t.Errorf("subresource=%v: patch %s does not carry the changed condition", store.Subresource, p.Body)
		}
	}
}

func TestSettleTestsTheClaimFirst(t *testing.T) {
	claimed := sampleStatus()
	final := claimed.Clone()
	final.Claim, final.State = nil, report.StateFired
	for _, tc := range []struct {
		name       string
		store      StatusLocation
		deactivate bool
		wantSub    string
		wantOps    []string
		wantTest   any
	}{
		{"status subresource", StatusLocation{Subresource: true}, false, "status", []string{"test", "replace"}, claimed.Claim.Sweep},
		{"annotation", StatusLocation{}, false, "", []string{"test", "replace"}, write.MustJSON(claimed)},
		{"annotation, deactivating", StatusLocation{}, true, "", []string{"test", "replace", "add"}, write.MustJSON(claimed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.store.settle(claimed, final, tc.deactivate)
			if !p.JSON || p.Subresource != tc.wantSub {
				t.Fatalf("patch json=%v subresource=%q, want a JSON patch of %q", p.JSON, p.Subresource, tc.wantSub)
			}
			var ops []struct {
				Op    string `json:"op"`
				Path  string `json:"path"`
				Value any    `json:"value"`
			}
			if err := json.Unmarshal(p.Body, &ops); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range ops {
				names = append(names, o.Op)
			}
			if !slices.Equal(names, tc.wantOps) {
				t.Fatalf("ops %q, want %q", names, tc.wantOps)
			}
			if ops[0].Value != tc.wantTest {
				t.Errorf("test op compares %v, want %v", ops[0].Value, tc.wantTest)
			}
			if tc.deactivate && (ops[2].Path != "/spec/deactivated" || ops[2].Value != true) {
				t.Errorf("last op %+v does not deactivate", ops[2])
			}
		})
	}
}

func TestCloneSharesNothingTheSweepChanges(t *testing.T) {
	st := sampleStatus()
	st.LastAction = &status.LastAction{Policy: "p", Action: policy.ActionDelete, Result: report.ResultSucceeded}
	st.Conditions = []metav1.Condition{{Type: status.ConditionFired, Status: metav1.ConditionTrue}}
	want := write.MustJSON(st)

	c := st.Clone()
	c.LastAction.Result = report.ResultFailed
	c.Conditions[0].Status = metav1.ConditionFalse
	c.Checks["p"] = policy.CheckState{}
	if got := write.MustJSON(st); got != want {
		t.Errorf("changing the clone changed the original:\n%s\nwant\n%s", got, want)
	}
}

// listedOf is obj as a sweep lists it: obj in a page of its own, decoded.
func listedOf(t testing.TB, obj *unstructured.Unstructured) listpage.Listed {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	page, err := listpage.DecodePage([]byte(`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManagerList","metadata":{},"items":[` + string(data) + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return page.Items[0].Listed()
}
