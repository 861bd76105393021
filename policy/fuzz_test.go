package policy

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzParseAndEvaluate feeds arbitrary JSON to Parse, as a manager stored
// under the original CRD may hold anything, and evaluates whatever parses.
// Neither may panic; a manager that parses without problems must have a
// target and at least one policy, each with a known condition and action.
func FuzzParseAndEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"NamespaceManager","metadata":{"name":"a","namespace":"a"},"spec":{"policies":[{"name":"p p","condition":{"type":"TTL","params":{"ttlSeconds":40}},"action":{"type":"DELETE"}}]}}`,
		`{"metadata":{"name":"b"},"spec":{"namespace":"x","policies":[{"name":"pods","condition":{"type":"PODS_SUCCEED","params":{"podLabels":{"a":"b"},"minChecks":3}},"action":{"type":"SCALE_DOWN","params":{"selectors":[{"kind":"deployment","labels":{"x":"y"}}]}}}]}}`,
		`{"metadata":{"name":"c"},"spec":{"policies":[{"name":"hook","condition":{"type":"TTL"},"action":{"type":"WEBHOOK","params":{"url":"https://h/x"}}}]}}`,
		`{"spec":{"policies":{}}}`,
		`{"spec":"x"}`,
		`{"spec":{"deactivated":"yes","policies":[1,"a",null,{"name":5}]}}`,
		`{"spec":{"policies":[{"name":"p p","condition":{"type":"TTL","params":{"ttlSeconds":1e300}},"action":{"type":"DELETE"}}]}}`,
	} {
		f.Add([]byte(seed), int64(3600))
	}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte, offset int64) {
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		m, problems := Parse(u)
		if len(problems) > 0 {
			for _, p := range problems {
				if p.Field == "" {
					t.Fatalf("problem without a field path: %v", p)
				}
			}
			return
		}
		if len(m.Policies) == 0 {
			t.Fatalf("valid manager without policies: %s", data)
		}
		now := created.Add(time.Duration(offset) * time.Second)
		in := Input{Now: now, TargetCreated: created, Pods: map[int]PodsCheck{}}
		for range len(m.Policies) + 1 {
			out := Evaluate(m, in)
			if out.Verdict != NeedPods {
				if out.Verdict == Fire && (out.Policy < 0 || out.Policy >= len(m.Policies)) {
					t.Fatalf("fired policy %d of %d", out.Policy, len(m.Policies))
				}
				return
			}
			in.Pods[out.Policy] = PodsCheck{NotSucceeded: int(offset & 1)}
		}
		t.Fatalf("evaluation asked for pods more often than there are policies: %s", data)
	})
}
