package explain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// CameBack is a rule that deleted a namespace of this name before this one
// was made, as the rule's status lists its latest actions (the last
// status.MaxLatest of them): the namespace came back.
type CameBack struct {
	// Rule is the rule's namespace/name.
	Rule   string `json:"rule"`
	Policy string `json:"policy"`
	Action string `json:"action"`
	// Deleted is when the rule's action succeeded.
	Deleted time.Time `json:"deleted"`
}

// cameBack lists every NamespaceManager the caller may list, cluster-wide,
// in pages of pageSize, each decoded no further than a sweep reads (of its
// status, only what status.Status names), at most maxListed within
// readTimeout, and keeps the rules whose latest actions removed a
// namespace named as ns before ns was made. A list refused or cut is said
// in Unlisted, with what was found before it.
func (r *Report) cameBack(ctx context.Context, c cluster.Clients, ns *corev1.Namespace, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, readTimeout, errors.New("timed out"))
	defer cancel()
	cut, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	rd := cluster.Reader{Clients: c, PageSize: pageSize, Log: log}
	read := 0
	err := rd.EachManager(cut, true, func(m listpage.Listed) {
		if read++; read > maxListed {
			stop(errTooMany)
			return
		}
		rule := m.Obj.GetNamespace() + "/" + m.Obj.GetName()
		r.CameBack = append(r.CameBack, removedBefore(rule, latestOf(m), ns.Name, ns.CreationTimestamp.Time)...)
	})
	const what = "NamespaceManagers (rules that deleted it before)"
	switch {
	case errors.Is(context.Cause(cut), errTooMany):
		r.Unlisted = append(r.Unlisted, Unlisted{What: what, Error: fmt.Sprintf("more than %d in the cluster: explain reads no more", maxListed)})
	case apierrors.IsForbidden(err):
		r.Unlisted = append(r.Unlisted, Unlisted{What: what, Error: fmt.Sprintf("you may not list them cluster-wide: %v", err)})
	case apierrors.IsNotFound(err):
		// The CRD is not installed: no rule deleted anything.
	case err != nil:
		r.Unlisted = append(r.Unlisted, Unlisted{What: what, Error: fmt.Sprintf("list them: %v", err)})
	}
}

// latestOf are manager m's latest actions as a rule: its status, or,
// under the original CRD, its status annotation.
func latestOf(m listpage.Listed) []status.PairAction {
	for _, subresource := range []bool{true, false} {
		if st := m.Record(subresource); st.Rule != nil {
			return st.Rule.Latest
		}
	}
	return nil
}

// removedBefore are those of a rule's latest actions that removed a
// namespace named namespace, and succeeded, before created: what a rule
// did to this namespace itself (after created) is not its coming back.
func removedBefore(rule string, latest []status.PairAction, namespace string, created time.Time) []CameBack {
	var out []CameBack
	for _, a := range latest {
		if a.Namespace != namespace || a.Result != report.ResultSucceeded || !a.Time.Before(created) || !policy.ActionKindOf(a.Action).RemovesTarget() {
			continue
		}
		out = append(out, CameBack{Rule: rule, Policy: a.Policy, Action: a.Action, Deleted: a.Time})
	}
	return out
}

// Sentence says, for the text report, that a namespace made at created
// came back after c.
func (c CameBack) Sentence(created time.Time) string {
	return fmt.Sprintf("made again at %s after rule %s deleted it at %s (policy %s)",
		created.UTC().Format(time.RFC3339), c.Rule, c.Deleted.UTC().Format(time.RFC3339), c.Policy)
}

// ForGood says, of a namespace that came back while its owner ref exists,
// who may have made it again and what deletes it for good.
func ForGood(ref string) string {
	return "its owner " + ref + " exists and may have made it again: a DELETE with params: {via: owner} deletes the owner first, " +
		"or a rule with OWNER_GONE deletes the namespace once the owner has gone, for good (docs/gitops.md)"
}
