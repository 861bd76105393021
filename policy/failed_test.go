package policy

import (
	"testing"
	"time"
)

// failedPods builds a PODS_FAILED policy with the default initial delay.
func failedPods(name string) Policy {
	return Policy{
		Name:      name,
		Condition: Condition{Type: ConditionPodsFailed, InitialDelay: DefaultInitialDelay, PodLabels: map[string]string{"role": "e2e"}},
		Action:    Action{Type: ActionWebhook, URL: "https://hooks.example.com/nsman"},
	}
}

// PODS_FAILED waits out its initial delay without a check, then asks for
// one; a failed pod or Job makes it hold, none keeps it waiting with no due
// time (only pods can change it), and a later policy is still evaluated.
func TestEvaluatePodsFailed(t *testing.T) {
	m := mgr(failedPods("report a failure"), ttl("delete in a day", 24*time.Hour))
	tests := []struct {
		name    string
		in      Input
		verdict Verdict
		policy  int
		detail  string
		due     time.Time
	}{
		{name: "within the initial delay", in: input(at(30 * time.Second)), verdict: Wait,
			detail: "first check for failed pods after the initial delay, at 2026-03-14T09:27:53Z", due: at(DefaultInitialDelay)},
		{name: "past it, a check is needed", in: input(at(2 * time.Minute)), verdict: NeedPods},
		{name: "a failed pod", in: input(at(2*time.Minute), func(in *Input) { in.Pods = map[int]PodsCheck{0: {Failed: 1, Example: "pod e2e-1 failed"}} }),
			verdict: Fire, detail: "a pod matching role=e2e failed: pod e2e-1 failed"},
		{name: "a failed Job", in: input(at(2*time.Minute), func(in *Input) { in.Pods = map[int]PodsCheck{0: {Failed: 1, Example: "job e2e failed"}} }),
			verdict: Fire, detail: "a pod matching role=e2e failed: job e2e failed"},
		{name: "pods running or succeeded", in: input(at(2*time.Minute), func(in *Input) { in.Pods = map[int]PodsCheck{0: {NotSucceeded: 3}} }),
			verdict: Wait, detail: "no pod matching role=e2e has failed", due: at(24 * time.Hour)},
		{name: "the TTL after it still fires", in: input(at(25*time.Hour), func(in *Input) { in.Pods = map[int]PodsCheck{0: {}} }),
			verdict: Fire, policy: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(m, tt.in)
			if out.Verdict != tt.verdict || out.Policy != tt.policy {
				t.Fatalf("verdict %s policy %d, want %s %d (%+v)", out.Verdict, out.Policy, tt.verdict, tt.policy, out)
			}
			if tt.detail != "" && out.Policies[0].Detail != tt.detail {
				t.Errorf("detail %q, want %q", out.Policies[0].Detail, tt.detail)
			}
			if tt.verdict == Wait && !out.NextDue.Equal(tt.due) {
				t.Errorf("next due %v, want %v", out.NextDue, tt.due)
			}
		})
	}
}

// PODS_FAILED reads initialDelaySeconds (default 60) and podLabels, and
// checks them as PODS_SUCCEED does.
func TestParsePodsFailed(t *testing.T) {
	obj := manager(policies(map[string]any{
		"name":      "report a failure",
		"condition": map[string]any{"type": "PODS_FAILED", "params": map[string]any{"podLabels": map[string]any{"role": "e2e"}}},
		"action":    map[string]any{"type": "DELETE"},
	}))
	m, errs := Parse(obj)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := m.Policies[0].Condition
	if c.Type != ConditionPodsFailed || c.InitialDelay != DefaultInitialDelay || c.PodLabels["role"] != "e2e" {
		t.Errorf("condition %+v, want PODS_FAILED after 60s on role=e2e", c)
	}
	bad := manager(policies(map[string]any{
		"name":      "report a failure",
		"condition": map[string]any{"type": "PODS_FAILED", "params": map[string]any{"initialDelaySeconds": int64(-1), "podLabels": map[string]any{"bad key!": "x"}}},
		"action":    map[string]any{"type": "DELETE"},
	}))
	if _, errs := Parse(bad); len(errs) != 2 {
		t.Errorf("problems %v, want the delay and the label name", errs)
	}
}
