package policy

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// The parameters PODS_SUCCEED and PODS_FAILED share: how old the target
// must be before its pods are checked, and which pods count.
var (
	initialDelayParam = Param{Key: "initialDelaySeconds", Kind: ParamSeconds, Default: int64(DefaultInitialDelay / time.Second)}
	podLabelsParam    = Param{Key: "podLabels", Kind: ParamLabels, Absent: "every pod"}
)

// delayed reports whether the target is younger than c's initial delay,
// and then says in state when the first check (what) comes.
func delayed(state *PolicyState, in Input, c Condition, what string) bool {
	start := in.TargetCreated.Add(c.InitialDelay)
	if !in.Now.Before(start) {
		return false
	}
	state.Detail = fmt.Sprintf("%s after the initial delay, at %s", what, stamp(start))
	state.Due = start
	return true
}

func describeSelector(set map[string]string) string {
	if len(set) == 0 {
		return "in the namespace"
	}
	return "matching " + labels.SelectorFromSet(set).String()
}
