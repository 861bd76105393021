package policy

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/policy/window"
)

// benchManagers is the size of the fleet the benchmarks evaluate: the scale
// nsman must stay cheap at (issue 6).
const benchManagers = 10_000

// benchFleet builds n managers as a list would return them: even ones with a
// TTL policy, odd ones with a PODS_SUCCEED policy (minChecks 2) followed by a
// TTL fallback, every tenth with a webhook action.
func benchFleet(n int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, n)
	for i := range n {
		name := fmt.Sprintf("team-%05d", i)
		action := map[string]any{"type": ActionDelete}
		if i%10 == 0 {
			action = map[string]any{"type": ActionWebhook, "params": map[string]any{"url": "https://hooks.example.com/nsman/" + name}}
		}
		var policies []any
		if i%2 == 0 {
			policies = []any{map[string]any{
				"name":      "expire",
				"condition": map[string]any{"type": ConditionTTL, "params": map[string]any{"ttlSeconds": int64(3600 + i)}},
				"action":    action,
			}}
		} else {
			policies = []any{
				map[string]any{
					"name": "tests done",
					"condition": map[string]any{"type": ConditionPodsSucceed, "params": map[string]any{
						"initialDelaySeconds": int64(60), "periodSeconds": int64(10), "minChecks": int64(2),
						"podLabels": map[string]any{"app": "e2e", "run": fmt.Sprint(i)},
					}},
					"action": action,
				},
				map[string]any{
					"name":      "fallback",
					"condition": map[string]any{"type": ConditionTTL, "params": map[string]any{"ttlSeconds": int64(86400)}},
					"action":    map[string]any{"type": ActionDelete},
				},
			}
		}
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": Group + "/" + Version,
			"kind":       Kind,
			"metadata": map[string]any{
				"namespace": name, "name": name, "uid": fmt.Sprintf("uid-%05d", i), "generation": int64(1),
			},
			"spec": map[string]any{"policies": policies},
		}})
	}
	return objs
}

// BenchmarkParse parses and validates 10,000 managers per op.
func BenchmarkParse(b *testing.B) {
	objs := benchFleet(benchManagers)
	b.ReportAllocs()
	for b.Loop() {
		for _, obj := range objs {
			if _, errs := Parse(obj); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}

// BenchmarkEvaluate evaluates 10,000 parsed managers per op the way a sweep
// does: a PODS_SUCCEED manager past its initial delay first asks for a pods
// check (NeedPods), then is evaluated again with the check's result.
func BenchmarkEvaluate(b *testing.B) {
	objs := benchFleet(benchManagers)
	managers := make([]Manager, len(objs))
	for i, obj := range objs {
		managers[i], _ = Parse(obj)
	}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created.Add(30 * time.Minute)
	running := PodsCheck{NotSucceeded: 1, Example: "pod e2e-0 has not succeeded"}
	b.ReportAllocs()
	var fired, waiting int
	for b.Loop() {
		fired, waiting = 0, 0
		for _, m := range managers {
			in := Input{Now: now, TargetCreated: created}
			out := Evaluate(m, in)
			if out.Verdict == NeedPods {
				in.Pods = map[int]PodsCheck{out.Policy: running}
				out = Evaluate(m, in)
			}
			switch out.Verdict {
			case Fire:
				fired++
			case Wait:
				waiting++
			default:
				b.Fatalf("%s/%s: verdict %s after the pods check", m.Namespace, m.Name, out.Verdict)
			}
		}
	}
	if waiting != benchManagers {
		b.Fatalf("%d waiting, %d fired; want all %d waiting", waiting, fired, benchManagers)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}

// BenchmarkParseEvaluate is both, as a sweep pays them for every manager.
func BenchmarkParseEvaluate(b *testing.B) {
	objs := benchFleet(benchManagers)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created.Add(30 * time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		for _, obj := range objs {
			m, _ := Parse(obj)
			in := Input{Now: now, TargetCreated: created}
			if out := Evaluate(m, in); out.Verdict == NeedPods {
				in.Pods = map[int]PodsCheck{out.Policy: {NotSucceeded: 1, Example: "pod e2e-0 has not succeeded"}}
				Evaluate(m, in)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}

// windowedManager is a manager at nsman's CRD bounds for windows: 64
// policies of 16 windows each, in eight time zones.
func windowedManager() *unstructured.Unstructured {
	zones := []string{"Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "Europe/London", "America/Sao_Paulo", "Asia/Kolkata", "Africa/Johannesburg"}
	policies := make([]any, 0, maxPolicies)
	for i := range maxPolicies {
		windows := make([]any, 0, window.MaxWindows)
		for j := range window.MaxWindows {
			windows = append(windows, map[string]any{"days": []any{"Mon", "Tue"}, "from": "22:00", "to": "06:00", "timeZone": zones[(i+j)%len(zones)]})
		}
		policies = append(policies, map[string]any{
			"name":      fmt.Sprintf("window %02d", i),
			"condition": map[string]any{"type": ConditionTTL, "params": map[string]any{"ttlSeconds": int64(3600)}},
			"action":    map[string]any{"type": ActionDelete},
			"windows":   windows,
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version, "kind": Kind,
		"metadata": map[string]any{"namespace": "team-a", "name": "windows", "uid": "uid-w", "generation": int64(1)},
		"spec":     map[string]any{"policies": policies},
	}}
}
