package execute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// sleepAction puts the workloads the policy selects to sleep, wakes them,
// or puts those woken since back to sleep, and keeps the target's state.
type sleepAction struct{ common }

func (a sleepAction) apply(ctx context.Context, x *Executor, _ policy.Manager, _ record.Record, p *decide.Plan, _ *report.Reclaimed) (applied, error) {
	if p.Target.Recreated {
		return leftAlone("sleep or wake", p.Target), nil
	}
	return a.sleep(ctx, x, p.Target.Name, p.Policy.Action, p.Wake, p.Resleep)
}

// keep sets in o the state plan p leaves, its action done or failed with
// err: awake after a wake; asleep after a sleep, part-way when it failed
// (the next sweep puts the rest to sleep, or wakes what slept once the
// policy stops holding). A wake that failed leaves the target asleep, to
// be woken again.
func (sleepAction) keep(o *record.Outcome, p *decide.Plan, err error, now time.Time) {
	if p.Wake {
		o.Woke = err == nil
		return
	}
	o.Asleep = &status.Asleep{Policy: p.Policy.Name, Since: now.UTC(), Partial: err != nil}
}

// sleep puts the workloads a SLEEP action selects to sleep, as its
// SleepTo says, or wakes them (to what their records say, whatever the
// action says now): with no selectors, those of every kind nsman puts to
// sleep (Kinds.All) that its RBAC lets it list and patch. Of those, the
// API groups whose discovery failed and a workload whose sleep was
// refused (403) are warnings of the entry, not a failure: the rest slept
// or woke. Resleep: they are put back to sleep, at most MaxResleep of
// them.
func (sleepAction) sleep(ctx context.Context, x *Executor, namespace string, action policy.Action, wake, resleep bool) (applied, error) {
	selectors := action.Selectors
	verb := map[bool]string{false: "sleep", true: "wake"}[wake]
	every := len(selectors) == 0
	var selections []probe.Selection
	var unavailable []string
	var err error
	if every {
		selections, unavailable, err = x.Kinds.All(ctx, x.Reads.Clients.Kube)
	} else if selections, err = x.Kinds.Resolve(x.Reads.Clients.Kube, selectors); err != nil {
		return applied{}, fmt.Errorf("%s in namespace %s: %w", verb, namespace, err)
	}
	// The kinds of its patches (a wake's, as the policy names them now):
	// one not served fails a sleep before it writes, a wake after it woke
	// the rest.
	patched, patchErr := x.Kinds.Patched(x.Reads.Clients.Kube, action.SleepTo.Patches)
	if patchErr != nil {
		patchErr = fmt.Errorf("%s in namespace %s: %w", verb, namespace, patchErr)
		if !wake {
			return applied{}, patchErr
		}
	}
	selections = append(selections, patched...)
	var did applied
	var actErr error
	if !wake {
		did, actErr = putToSleep(ctx, x, namespace, probe.ToSleep(selections, action.SleepTo), action.SleepTo, every, resleep)
	} else {
		// A wake writes only to workloads nsman put to sleep (they carry its
		// record): one refused is a failure, woken again at the next sweep.
		var skipped []string
		did.effects, skipped, actErr = EachKind(ctx, x.Reads.Clients, namespace, probe.ToWake(selections), every, func(kind probe.Kind, w *Workload) (string, error) {
			return Wake(ctx, x.Reads.Clients, x.Writer, kind, w)
		})
		deny(x.Kinds, skipped)
	}
	if len(unavailable) > 0 {
		did.warnings = append([]string{fmt.Sprintf("discovery failed for API group(s) %s: their kinds were neither put to sleep nor woken", strings.Join(unavailable, ", "))},
			did.warnings...)
	}
	return did, errors.Join(err, actErr, patchErr)
}

// putToSleep puts selections' workloads to sleep as to says (see Sleep)
// and sums what they free; optional: as EachKind's, and a workload of a kind found whose
// change is refused is a warning. A workload scaled whose template was not
// read (larger than MaxRequestsBytes) says so in its effect. Resleep: back
// to sleep, each awake one as the namespace's MaxResleep of the sweep allow
// (see resleeps.take), from a point that moves each minute (see
// resleepStart), the rest counted and left to the next sweeps.
func putToSleep(ctx context.Context, x *Executor, namespace string, selections []probe.Selection, to policy.SleepTo, optional, resleep bool) (applied, error) {
	var freed report.Reclaimed
	var refused refusals
	slept := 0
	sleep := func(kind probe.Kind, w *Workload) (string, error) {
		effect, from, err := Sleep(ctx, x.Reads.Clients, x.Writer, kind, w, to)
		if from != nil { // a CronJob or ScaledObject has no spec.template: it frees nothing counted
			slept++
			frees, counted := from.Frees(to)
			if kind.Way.FreesLoadBalancer() {
				frees.LoadBalancers = 1
			}
			freed.Add(frees)
			if !counted && kind.Way.FreesPods() && !x.SkipReclaim {
				effect += fmt.Sprintf("; its requests not counted: %d bytes as listed, more than the %d read for them", from.Requests.Uncounted, MaxRequestsBytes)
			}
		}
		return effect, refused.keep(optional, kind, w, err)
	}
	var woken []listedWorkload
	left, others := 0, 0
	effects, skipped, err := EachKind(ctx, x.Reads.Clients, namespace, selections, optional, func(kind probe.Kind, w *Workload) (string, error) {
		switch {
		case !resleep || !awake(kind, w, to):
			return sleep(kind, w)
		case len(woken) == maxWoken:
			left++
		default:
			woken = append(woken, listedWorkload{kind: kind, w: w})
		}
		return "", nil
	})
	deny(x.Kinds, skipped)
	errs := []error{err}
	start := resleepStart(x.Now, len(woken))
	for _, o := range slices.Concat(woken[start:], woken[:start]) {
		switch ok, other := x.resleeps.take(namespace, o.kind, o.w.Object.GetName()); {
		case other:
			others++
			continue
		case !ok:
			left++
			continue
		}
		effect, err := sleep(o.kind, o.w)
		errs = append(errs, err)
		if effect != "" {
			effects = append(effects, effect)
		}
	}
	if left > 0 {
		effects = append(effects, leftAwake(left))
	}
	out := applied{effects: effects, slept: slept, left: left, others: others, warnings: refused.warnings()}
	if !x.SkipReclaim {
		out.reclaimed = &freed
	}
	return out, errors.Join(errs...)
}

// refusals are the workloads of kinds found by discovery whose change the
// API server refused (403) though the kind's access review allowed it (an
// admission policy or webhook) or failed: the first ten named, the rest
// counted, so that a namespace of many refused keeps no more. EachKind
// calls its change one workload after the other, so they need no lock.
type refusals struct {
	named []string
	more  int
}

// keep returns err, or nil after keeping w when err refused the change of
// an optional workload of a kind found.
func (r *refusals) keep(optional bool, kind probe.Kind, w *Workload, err error) error {
	if !optional || !kind.Found || !apierrors.IsForbidden(err) {
		return err
	}
	if len(r.named) < 10 {
		r.named = append(r.named, kind.Name+"/"+w.Object.GetName())
	} else {
		r.more++
	}
	return nil
}

// warnings is what the entry says of r: one line, at most ten named.
func (r refusals) warnings() []string {
	if len(r.named) == 0 {
		return nil
	}
	line := "refused (403), left as they were: " + strings.Join(r.named, ", ")
	if r.more > 0 {
		line += fmt.Sprintf(" and %d more", r.more)
	}
	return []string{line}
}

// deny drops the kinds of skipped, which nsman may not list, from the
// sweep's kinds.
func deny(kinds *probe.Kinds, skipped []string) {
	for _, r := range skipped {
		kinds.Deny(schema.ParseGroupResource(r))
	}
}
