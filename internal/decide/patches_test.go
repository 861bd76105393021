package decide

import (
	"testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// sleepPatching is a SLEEP that suspends the target's HelmReleases.
var sleepPatching = map[string]any{"type": policy.ActionSleep, "params": map[string]any{"patches": []any{
	map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "patch": map[string]any{"spec": map[string]any{"suspend": true}}},
}}}

// A patch writes with nsman's rights, whatever its tenant may write: a
// manager outside the trusted namespaces may not bring one, even for its
// own namespace, and one in a trusted namespace may.
func TestEvaluateManagerPatches(t *testing.T) {
	nights := policies(pol("nights", ttl(3600), sleepPatching))
	listed := []cluster.Namespace{targetNS()}
	runManagerCases(t, []managerCase{
		{name: "from a trusted namespace", obj: newManager(nights), listed: listed, lists: 1,
			want: want{policy: "nights", plan: &wantPlan{step: StepAct, policy: "nights", generation: 3, reason: "TTL 1h elapsed", name: target, uid: "ns-uid-1"}}},
		{name: "from an untrusted namespace, its own", obj: newManager(livesIn(target, "cleanup"), nights), listed: listed,
			want: want{state: report.StateForbidden, msg: "a manager in namespace preview-7 may not patch objects: patches are for managers in a trusted namespace (nsman) and rules"}},
		{name: "without patches, from an untrusted namespace, its own", obj: newManager(livesIn(target, "cleanup"), policies(pol("nights", ttl(3600), sleepAction))), listed: listed, lists: 1,
			want: want{policy: "nights", plan: &wantPlan{step: StepAct, policy: "nights", generation: 3, reason: "TTL 1h elapsed", name: target, uid: "ns-uid-1", home: true}}},
	})
}
