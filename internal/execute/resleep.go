package execute

import (
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// MaxResleep bounds the workloads put back to sleep in a namespace in one
// sweep (each one patch, and its retries on a conflict), by all the
// managers and rules that keep it asleep together: a tenant who wakes more
// has the rest put back by the next sweeps. The bound is per namespace:
// across namespaces, --max-actions caps them, each subject that puts a
// namespace back to sleep taking one place, shared round-robin as any
// action's (without it, a tenant of 200 namespaces gets up to 200 × 50).
const MaxResleep = 50

// resleeps is what the subjects of a sweep put back to sleep, namespace by
// namespace: the workloads each took (at most MaxResleep of a namespace),
// and whether one told it. It is safe for concurrent use.
type resleeps struct {
	mu    sync.Mutex
	taken map[string]map[string]bool
	told  map[string]bool
}

// take reports whether the workload of kind named name, awake in
// namespace, is the caller's to put back to sleep, and counts it: not when
// another subject of the sweep took it (others), nor past the MaxResleep
// workloads of a namespace a sweep puts back, whichever managers and rules
// ask.
func (r *resleeps) take(namespace string, kind probe.Kind, name string) (ok, others bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken == nil {
		r.taken = map[string]map[string]bool{}
	}
	taken := r.taken[namespace]
	if taken == nil {
		taken = map[string]bool{}
		r.taken[namespace] = taken
	}
	key := kind.Resource.GroupResource().String() + "/" + name
	switch {
	case taken[key]:
		return false, true
	case len(taken) == MaxResleep:
		return false, false
	}
	taken[key] = true
	return true, false
}

// tell reports whether the caller, which put workloads of namespace back to
// sleep, is the first of the sweep to, and marks it: of the managers and
// rules that put a namespace back, one tells it, in one SleepUndone Event,
// however many there are. putBack counts the workloads of namespace the
// sweep's subjects took to put back so far.
func (r *resleeps) tell(namespace string) (first bool, putBack int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[string]bool{}
	}
	if r.told[namespace] {
		return false, 0
	}
	r.told[namespace] = true
	return true, len(r.taken[namespace])
}

// entry is e, the entry of plan p, a sleep back that did did and ended
// with err, as the sweep's other subjects leave it: when it wrote nothing,
// or another subject tells the namespace's put-back, it ends there (done),
// asleep, naming no one, the record left as it is; the first to write
// tells it, counting what all put back so far. acted: it wrote.
func (r *resleeps) entry(e report.Entry, p *decide.Plan, did applied, err error) (_ report.Entry, acted, done bool) {
	if err != nil {
		return e, false, false
	}
	asleep := func(why string) (report.Entry, bool, bool) {
		e.State, e.Message, e.Undone = report.StateAsleep, p.Reason+"; "+why, nil
		return e, false, true
	}
	switch {
	case did.slept == 0 && did.left > 0:
		return asleep(leftAwake(did.left) + " (put back by other managers or rules of it in this sweep)")
	case did.slept == 0 && did.others > 0:
		return asleep("put back to sleep by another manager or rule in this sweep")
	case did.slept == 0:
		// Read again, nothing it selects was awake: another sweep, or
		// another subject, was first.
		return asleep("nothing it selects was awake when read again")
	}
	first, putBack := r.tell(p.Target.Name)
	if !first {
		e, _, _ = asleep("put back to sleep with another manager or rule of it in this sweep, which tells who woke them")
		e.Effects = did.effects
		return e, true, true
	}
	// It tells the namespace's put-back, whoever put back what.
	e.PutBack = max(e.PutBack, putBack)
	return e, true, false
}

// Rotation is the point of a ring of 2^64 (a hash's, a list's scaled to
// it) that the sweeps of now's minute start from: it moves by the golden
// ratio of the ring each minute (a Weyl sequence), so that consecutive
// sweeps start far apart and every arc of the ring is started from in
// turn, with no record to keep. The webhook deliveries' queue (sweep) and
// the put-back of workloads woken (resleepStart) start there.
func Rotation(now time.Time) uint64 {
	return uint64(now.Unix()/60) * 0x9e3779b97f4a7c15
}

// resleepStart is where, of n workloads awake, the put-back of the sweep
// at now starts: Rotation scaled to n, so that the workloads listed first
// are not the ones put back in every sweep, and a tenant who wakes them
// again each minute keeps no other awake.
func resleepStart(now time.Time, n int) int {
	start, _ := bits.Mul64(Rotation(now), uint64(n))
	return int(start)
}

// listedWorkload is a workload of kind as listed.
type listedWorkload struct {
	kind probe.Kind
	w    *Workload
}

// maxWoken bounds the workloads awake that a put-back keeps in a
// namespace, a few hundred bytes each, to choose its MaxResleep among:
// those past it are left to the next sweeps with the rest.
const maxWoken = 20 * MaxResleep

// leftAwake says that n workloads awake were left to the next sweeps.
func leftAwake(n int) string {
	return fmt.Sprintf("%d more awake, left to the next sweeps: at most %d are put back to sleep in a namespace per sweep", n, MaxResleep)
}

// awake reports whether Sleep to to would write to w, of kind, as listed:
// a workload at or below to's replicas is asleep.
func awake(kind probe.Kind, w *Workload, to policy.SleepTo) bool {
	patch, _ := kind.Way.Sleep("", w.Object, to)
	return patch != nil && w.Object.GetLabels()[status.KeepAwakeLabel] != "true"
}
