package execute

import (
	"cmp"
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/owner"
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
	if p.Policy.Action.Via == policy.ViaOwner && p.Owner != nil && p.Owner.Presence != policy.OwnerGone {
		if did, through, err := x.deleteOwner(ctx, p); through || err != nil {
			return did, err
		}
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
// or takes too long (see reclaim.Reclaim.Namespace), the error says why: the
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

// deleteOwner carries out a DELETE via owner while plan p's owner is not
// known gone: it deletes the owner, read by name first, with foreground
// propagation and its UID as precondition, only if it is of a registered
// owner kind and deploys to the target; the namespace stays for a later
// sweep, once the owner is gone. through is false when the owner turns out
// gone: the namespace is then deleted as without via. An owner that cannot
// be read, or is being deleted, waits (applied.waits).
func (x *Executor) deleteOwner(ctx context.Context, p *decide.Plan) (did applied, through bool, err error) {
	o, t := p.Owner, p.Target
	if o.Presence == policy.OwnerUnknown {
		return applied{waits: fmt.Sprintf("the owner %s cannot be read (%s): nsman deletes no namespace through an owner it cannot see", cmp.Or(o.Ref, o.By), o.Why)}, true, nil
	}
	ref, err := owner.ParseRef(o.Ref)
	if err != nil {
		return applied{}, true, fmt.Errorf("delete via owner: %w", err)
	}
	kind, ok := owner.KindOf(ref.Resource)
	if !ok {
		return applied{}, true, fmt.Errorf("owner %s is not an Argo CD Application, a Flux Kustomization or HelmRelease: via owner deletes through those kinds only", o.Ref)
	}
	it, err := x.Reads.OwnerNow(ctx, kind.Resource, ref.Namespace, ref.Name)
	switch {
	case err != nil:
		return applied{waits: fmt.Sprintf("the owner %s cannot be read (%v): nsman deletes no namespace through an owner it cannot see", o.Ref, err)}, true, nil
	case it == nil:
		return applied{}, false, nil
	case it.Metadata.DeletionTimestamp != nil:
		return applied{waits: fmt.Sprintf("owner %s is being deleted; namespace %s follows once it is gone", o.Ref, t.Name)}, true, nil
	case !kind.DeploysTo(it, t.Listed.Marks("")):
		return applied{}, true, fmt.Errorf("owner %s does not deploy to namespace %s: nsman deletes through no owner that does not", o.Ref, t.Name)
	}
	err = x.Writer.DeleteOwner(ctx, kind.Resource, ref.Namespace, ref.Name, it.Metadata.UID)
	switch {
	case apierrors.IsNotFound(err):
		return applied{}, false, nil
	case apierrors.IsForbidden(err):
		return applied{}, true, fmt.Errorf("delete %s %s: %w; %s", kind.Name, o.Ref, err, owner.DeleteGrant)
	case err != nil:
		return applied{}, true, fmt.Errorf("delete %s %s: %w", kind.Name, o.Ref, err)
	}
	return applied{effects: []string{fmt.Sprintf("delete %s %s/%s (foreground)", kind.Name, ref.Namespace, ref.Name)},
		through: fmt.Sprintf("owner %s deleted; namespace %s follows once it is gone", o.Ref, t.Name)}, true, nil
}
