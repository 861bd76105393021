package record

import (
	"context"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"k8s.io/apimachinery/pkg/types"
)

// StaleRecordAge is how long ago a record of a rule that is gone must have
// been written last for a sweep to remove it. A rule created after a sweep
// listed the managers may have written records that sweep finds; an hour is
// far beyond any sweep.
const StaleRecordAge = time.Hour

// MaxStaleNamespaces is how many namespaces one sweep removes stale records
// from, with one patch each however many it holds: whoever may annotate
// namespaces can write records, and must not make a sweep write more than
// this. The namespaces beyond it keep theirs until the next sweep.
const MaxStaleNamespaces = 32

// Stale removes the records of rules that are gone (see Remove).
type Stale struct {
	// Writer writes (nowhere, in a dry run: DryRun says so in the logs).
	Writer write.Writer
	Log    *slog.Logger
	DryRun bool
	// Now is the sweep's time; Ours reports whether a namespace (by UID)
	// is of this sweep's shard.
	Now  time.Time
	Ours func(types.UID) bool
	// Bounded calls fn(0) … fn(n-1), Concurrency at a time, and waits for
	// them; Stop is done once the sweep is interrupted.
	Bounded func(n int, fn func(i int))
	Stop    context.Context
}

// StaleRemoval is what Remove did.
type StaleRemoval struct {
	// Removed counts the records removed (would remove, in a dry run);
	// Left counts those of the namespaces beyond MaxStaleNamespaces, in
	// LeftNamespaces, left to the next sweep.
	Removed, Left, LeftNamespaces int
}

// staleIn is a namespace's stale records, as listed.
type staleIn struct {
	namespace    string
	keys, values []string
}

// Remove removes from the namespaces of this shard the records,
// written last more than StaleRecordAge ago, of rules not among managers
// (every manager's UID: one that is no rule now may be one again), which a
// deleted rule leaves behind: all of a namespace's with one JSON patch that
// tests each is still as listed, in at most MaxStaleNamespaces namespaces,
// Concurrency at a time, none after an interrupt. Failures are logged.
func (st Stale) Remove(ctx context.Context, namespaces map[string]cluster.Namespace, managers map[types.UID]bool) StaleRemoval {
	found := st.find(namespaces, managers)
	var done StaleRemoval
	if len(found) > MaxStaleNamespaces {
		// Starting at a place drawn anew each sweep, not at the first name
		// nor where a clock says (an hourly schedule would always start at
		// the same few): no namespace is left out for good, and those whose
		// patch keeps failing cannot hold up the rest.
		start := rand.IntN(len(found))
		found = slices.Concat(found[start:], found[:start])
		for _, f := range found[MaxStaleNamespaces:] {
			done.Left += len(f.keys)
		}
		done.LeftNamespaces = len(found) - MaxStaleNamespaces
		found = found[:MaxStaleNamespaces]
		st.Log.Info("records of rules that are gone left to the next sweep", "namespaces", done.LeftNamespaces, "records", done.Left, "maxNamespaces", MaxStaleNamespaces)
	}
	var removed atomic.Int64
	st.Bounded(len(found), func(i int) {
		if st.Stop.Err() != nil {
			return
		}
		f := found[i]
		// One operation pair a record: 256 KiB of annotations hold at most
		// some 4,400 records, within the API server's 10,000 operations.
		ops := make([]write.PatchOp, 0, 2*len(f.keys))
		for j, key := range f.keys {
			path := write.AnnotationPointer(key)
			ops = append(ops, write.PatchOp{Op: "test", Path: path, Value: f.values[j]}, write.PatchOp{Op: "remove", Path: path})
		}
		attrs := []any{"namespace", f.namespace, "records", len(f.keys), "dryRun", st.DryRun}
		if err := st.Writer.PatchNamespace(ctx, f.namespace, write.JSONPatch("", ops...)); err != nil {
			st.Log.Warn("the records of rules that are gone were not removed", append(attrs, "error", err.Error())...)
			return
		}
		st.Log.Info("removed the records of rules that are gone", attrs...)
		removed.Add(int64(len(f.keys)))
	})
	done.Removed = int(removed.Load())
	return done
}

// find returns the namespaces of this shard holding records of rules not
// among managers written last more than StaleRecordAge ago, by name.
func (st Stale) find(namespaces map[string]cluster.Namespace, managers map[types.UID]bool) []staleIn {
	var found []staleIn
	live := status.PairAnnotations(managers)
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		ns := namespaces[name]
		if len(ns.Pairs) == 0 || ns.Terminating || !st.Ours(ns.UID) {
			continue
		}
		f := staleIn{namespace: name}
		for _, a := range ns.Pairs { // sorted by key
			if live[a.Key] {
				continue
			}
			// A record that holds no time (edited by hand, say) stays.
			if last := status.DecodePair(a.Value).LastTime(); !last.IsZero() && last.Before(st.Now.Add(-StaleRecordAge)) {
				f.keys, f.values = append(f.keys, a.Key), append(f.values, a.Value)
			}
		}
		if len(f.keys) > 0 {
			found = append(found, f)
		}
	}
	return found
}
