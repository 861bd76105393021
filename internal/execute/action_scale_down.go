package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// scaleDownAction puts the workloads the policy selects to sleep once.
type scaleDownAction struct{ common }

func (a scaleDownAction) apply(ctx context.Context, x *Executor, _ policy.Manager, _ record.Record, p *decide.Plan, _ *report.Reclaimed) (applied, error) {
	if p.Target.Recreated {
		return leftAlone("scale down", p.Target), nil
	}
	return a.scaleDown(ctx, x, p.Target.Name, p.Policy.Action)
}

// scaleDown puts every workload action selects to sleep as its SleepTo
// says (see Sleep), one request each, and sums what the workloads scaled
// free (with --reclaim). The selectors' and the patches' kinds are
// resolved first: one the cluster does not serve fails the action before
// anything is written.
func (scaleDownAction) scaleDown(ctx context.Context, x *Executor, namespace string, action policy.Action) (applied, error) {
	selections, err := x.Kinds.Resolve(x.Reads.Clients.Kube, action.Selectors)
	patched, patchErr := x.Kinds.Patched(x.Reads.Clients.Kube, action.SleepTo.Patches)
	if err = errors.Join(err, patchErr); err != nil {
		return applied{}, fmt.Errorf("scale down in namespace %s: %w", namespace, err)
	}
	selections = append(selections, patched...)
	return putToSleep(ctx, x, namespace, probe.ToSleep(selections, action.SleepTo), action.SleepTo, false, false)
}
