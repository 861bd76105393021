package execute

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// deleteAction deletes the target namespace: fresh, as it was listed (its
// own claim), else, completing an expired claim, by UID.
type deleteAction struct{ common }

func (deleteAction) apply(ctx context.Context, x *Executor, m policy.Manager, rec record.Record, p *decide.Plan, freed *report.Reclaimed) (applied, error) {
	t := p.Target
	if p.Step != decide.StepAct {
		effects, err := x.deleteClaimed(ctx, t)
		return applied{effects: effects}, err
	}
	unchanged := rec.Unchanged
	if !m.ReadsTouched() {
		unchanged = func(listed, now cluster.Namespace) bool {
			return rec.Unchanged(listed.WithoutTouch(), now.WithoutTouch())
		}
	}
	err := write.AsListed(ctx, t.Listed, x.Reads.NamespaceNow, unchanged, func(resourceVersion string) error {
		return x.Writer.DeleteNamespace(ctx, t.Name, t.UID, resourceVersion)
	})
	if err != nil {
		return applied{}, fmt.Errorf("delete namespace %s: %w", t.Name, err)
	}
	return applied{effects: []string{"delete namespace " + t.Name}, reclaimed: freed}, nil
}

// failed marks a DELETE whose answer was lost as uncertain: a later sweep
// confirms it by the namespace going (decide.StepConfirmDelete).
func (deleteAction) failed(e report.Entry, last, _ *status.LastAction, err error, _ time.Time) report.Entry {
	last.Uncertain = write.Uncertain(err)
	return e
}

// before is what plan p's fresh DELETE will free, read before it; nil
// for a DELETE that completes a claim and with --reclaim=false. When reading it fails
// or takes too long (see probe.Reclaim.Namespace), the error says why: the
// DELETE goes ahead, what it freed unknown.
func (deleteAction) before(ctx context.Context, x *Executor, p *decide.Plan) (*report.Reclaimed, error) {
	if x.SkipReclaim || p.Step != decide.StepAct {
		return nil, nil
	}
	freed, err := x.Reclaim.Namespace(ctx, p.Target.Name)
	if err != nil {
		x.Log.Warn("what the DELETE frees is not known", "namespace", p.Target.Name, "error", err.Error())
		return nil, err
	}
	return &freed, nil
}

// deleteClaimed deletes, for an expired claim, the namespace it was made
// for, by UID; one going or gone needs nothing, one recreated since is
// left alone. A 409 is read again: a webhook may refuse with one too.
func (x *Executor) deleteClaimed(ctx context.Context, t decide.Target) ([]string, error) {
	effect := "delete namespace " + t.Name
	if t.Going {
		return []string{effect + " (already being deleted)"}, nil
	}
	err := x.Writer.DeleteNamespace(ctx, t.Name, t.UID, "")
	if apierrors.IsConflict(err) {
		if now, exists, rerr := x.Reads.NamespaceNow(ctx, t.Name); rerr == nil && (!exists || now.UID != t.UID) {
			return []string{effect + " (already gone; a new namespace of that name is left alone)"}, nil
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return []string{effect + " (already gone)"}, nil
	case err != nil:
		return nil, fmt.Errorf("delete namespace %s: %w", t.Name, err)
	}
	return []string{effect}, nil
}
