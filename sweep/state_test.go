package sweep

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/policy"
)

func decodePatch(t *testing.T, p managerPatch) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(p.body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

func TestStateStoreRoundTrip(t *testing.T) {
	claim := Claim{Policy: "p", Action: policy.ActionDelete, Sweep: "s1", Expires: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Generation: 4}
	checks := map[string]policy.CheckState{"p": {Generation: 4, Passed: 2, Last: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}}
	for _, store := range []stateStore{{inStatus: false}, {inStatus: true}} {
		obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "m"}}}
		// Apply the patches the way a JSON merge patch would, one level deep
		// per section, then read the state back.
		for _, p := range []managerPatch{store.claimPatch("17", claim), store.checksPatch(checks)} {
			body := decodePatch(t, p)
			if p.subresource == "status" != store.inStatus {
				t.Fatalf("inStatus=%v: patch subresource %q", store.inStatus, p.subresource)
			}
			if meta, _ := body["metadata"].(map[string]any); meta != nil {
				if ann, ok := meta["annotations"].(map[string]any); ok {
					merged := obj.GetAnnotations()
					if merged == nil {
						merged = map[string]string{}
					}
					for k, v := range ann {
						merged[k] = v.(string)
					}
					obj.SetAnnotations(merged)
				}
			}
			if status, ok := body["status"].(map[string]any); ok {
				current, _ := obj.Object["status"].(map[string]any)
				if current == nil {
					current = map[string]any{}
				}
				for k, v := range status {
					current[k] = v
				}
				obj.Object["status"] = current
			}
		}
		got := store.read(obj)
		if got.claim == nil || *got.claim != claim {
			t.Errorf("inStatus=%v: claim %+v, want %+v", store.inStatus, got.claim, claim)
		}
		if !checksEqual(got.checks, checks) {
			t.Errorf("inStatus=%v: checks %+v, want %+v", store.inStatus, got.checks, checks)
		}
	}
}

func TestClaimPatchIsConditional(t *testing.T) {
	for _, store := range []stateStore{{inStatus: false}, {inStatus: true}} {
		body := decodePatch(t, store.claimPatch("42", Claim{Policy: "p"}))
		if rv := body["metadata"].(map[string]any)["resourceVersion"]; rv != "42" {
			t.Errorf("inStatus=%v: resourceVersion %v, want 42", store.inStatus, rv)
		}
	}
}

func TestFinishPatches(t *testing.T) {
	last := LastAction{Policy: "p", Action: policy.ActionDelete, Result: ResultSucceeded}
	tests := []struct {
		name       string
		store      stateStore
		deactivate bool
		want       []string // subresource and the sections of each patch
	}{
		{"annotations, success", stateStore{}, true, []string{":metadata,spec"}},
		{"annotations, failure", stateStore{}, false, []string{":metadata"}},
		{"status, success: spec first", stateStore{inStatus: true}, true, []string{":spec", "status:metadata,status"}},
		{"status, failure", stateStore{inStatus: true}, false, []string{"status:metadata,status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range tt.store.finishPatches(last, tt.deactivate) {
				body := decodePatch(t, p)
				sections := ""
				for _, k := range []string{"metadata", "spec", "status"} {
					if _, ok := body[k]; ok {
						if sections != "" {
							sections += ","
						}
						sections += k
					}
				}
				got = append(got, p.subresource+":"+sections)
				meta, _ := body["metadata"].(map[string]any)
				if rv, ok := meta["resourceVersion"]; ok {
					t.Errorf("finish patch is conditional (resourceVersion %v)", rv)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("patches %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("patch %d = %s, want %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}
