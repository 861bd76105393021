package probe

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/nsman/nsman/policy"
)

// A pods check asks what the condition's evidence names, whichever
// condition declares it: the pods that have not succeeded, the failed
// ones; a condition that declares none is refused without a request.
func TestChecksFollowTheConditionsEvidence(t *testing.T) {
	js, kube := newJobsServer(t,
		testJob("team", "running", nil),
		testJob("team", "broken", nil, batchv1.JobFailed))
	check := podsOf(t, kube).Checks(false)
	for _, ct := range policy.ConditionTypes() {
		before := js.requests.Load()
		got, err := check(t.Context(), "team", policy.Condition{Type: ct.Type()})
		switch ct.Evidence().Pods {
		case policy.NoPods:
			if err == nil || js.requests.Load() != before {
				t.Errorf("%s reads no pods: %+v, %v after %d requests; want it refused without one", ct.Type(), got, err, js.requests.Load()-before)
			}
		case policy.PodsNotSucceeded:
			if err != nil || got.NotSucceeded != 1 || got.Failed != 0 {
				t.Errorf("%s: %+v, %v; want the running Job holding it back", ct.Type(), got, err)
			}
		case policy.PodsFailed:
			if err != nil || got.Failed != 1 || got.NotSucceeded != 0 {
				t.Errorf("%s: %+v, %v; want the failed Job", ct.Type(), got, err)
			}
		default:
			t.Errorf("%s asks for pods evidence %d, which probe does not read", ct.Type(), ct.Evidence().Pods)
		}
	}
}
