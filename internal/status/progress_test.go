package status

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/policy"
)

func TestFiredStages(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	fired := []FiredPolicy{
		{Policy: "warn", Generation: 2, Time: at},
		{Policy: "old", Generation: 1, Time: at},
		{Policy: "paused", Generation: 1, Spec: "spec-a", Time: at},
	}
	tests := []struct {
		name       string
		generation int64
		spec       string
		want       []string
	}{
		{"this generation", 2, "", []string{"warn"}},
		{"an older generation", 1, "", []string{"old", "paused"}},
		{"a generation none fired in", 3, "", nil},
		{"the rule's spec, resumed under a new generation", 3, "spec-a", []string{"paused"}},
	}
	for _, tt := range tests {
		got := slices.Sorted(maps.Keys(FiredIn(fired, tt.generation, tt.spec)))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: FiredIn = %v, want %v", tt.name, got, tt.want)
		}
	}

	added := AddFired(fired, "warn", 2, "", at)
	if len(added) != 1 || added[0].Policy != "warn" || added[0].Time.Location() != time.UTC || !added[0].Time.Equal(at) {
		t.Errorf("AddFired in generation 2 = %+v, want warn alone (the others fired in another generation), at UTC", added)
	}
	if len(fired) != 3 || fired[0].Policy != "warn" {
		t.Errorf("AddFired changed its argument: %+v", fired)
	}
	kept := AddFired(fired, "next", 3, "spec-a", at)
	if names := []string{kept[0].Policy, kept[1].Policy}; len(kept) != 2 || !slices.Equal(names, []string{"paused", "next"}) {
		t.Errorf("AddFired under the same spec = %+v, want paused kept and next added", kept)
	}
}

func TestStatusCloneSharesNothing(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := Status{
		Progress: Progress{
			Checks:     map[string]policy.CheckState{"p": {Generation: 4, Passed: 2, Last: at}},
			Fired:      []FiredPolicy{{Policy: "warn", Generation: 4, Time: at}},
			LastAction: &LastAction{Policy: "p", Action: policy.ActionDelete, Result: "succeeded"},
		},
		Conditions: []metav1.Condition{{Type: ConditionFired, Status: metav1.ConditionTrue}},
	}
	want, _ := json.Marshal(st)
	c := st.Clone()
	c.Checks["p"] = policy.CheckState{}
	c.Fired[0].Policy = "changed"
	c.LastAction.Result = "failed"
	c.Conditions[0].Status = metav1.ConditionFalse
	if got, _ := json.Marshal(st); string(got) != string(want) {
		t.Errorf("changing the clone changed the original:\n%s\nwant\n%s", got, want)
	}
}
