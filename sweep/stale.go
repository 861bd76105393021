package sweep

import (
	"context"
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

// staleRemoval is what removeStaleRecords did.
type staleRemoval struct {
	// removed counts the records removed (would remove, in a dry run);
	// left counts those of the namespaces beyond MaxStaleNamespaces, in
	// leftNamespaces, left to the next sweep.
	removed, left, leftNamespaces int
}

// removeStaleRecords removes from the namespaces of this shard the records,
// written last more than StaleRecordAge ago, of rules not among managers
// (every manager's UID: one that is no rule now may be one again), which a
// deleted rule leaves behind: all of a namespace's with one JSON patch that
// tests each is still as listed, in at most MaxStaleNamespaces namespaces,
// Concurrency at a time, none after an interrupt. Failures are logged.
func (s *Sweeper) removeStaleRecords(ctx context.Context, r *sweepRun, managers map[types.UID]bool) staleRemoval {
	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return staleRemoval{}
	}
	type stale struct {
		namespace    string
		keys, values []string
	}
	var found []stale
	live := status.PairAnnotations(managers)
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		ns := namespaces[name]
		if len(ns.Pairs) == 0 || ns.Terminating || cluster.ShardOf(ns.UID, s.cfg.ShardCount) != s.cfg.ShardIndex {
			continue
		}
		f := stale{namespace: name}
		for _, key := range slices.Sorted(maps.Keys(ns.Pairs)) {
			if live[key] {
				continue
			}
			// A record that holds no time (edited by hand, say) stays.
			if last := status.DecodePair(ns.Pairs[key]).LastTime(); !last.IsZero() && last.Before(r.now.Add(-StaleRecordAge)) {
				f.keys, f.values = append(f.keys, key), append(f.values, ns.Pairs[key])
			}
		}
		if len(f.keys) > 0 {
			found = append(found, f)
		}
	}
	var done staleRemoval
	if len(found) > MaxStaleNamespaces {
		// Starting at a place drawn anew each sweep, not at the first name
		// nor where a clock says (an hourly schedule would always start at
		// the same few): no namespace is left out for good, and those whose
		// patch keeps failing cannot hold up the rest.
		start := rand.IntN(len(found))
		found = slices.Concat(found[start:], found[:start])
		for _, f := range found[MaxStaleNamespaces:] {
			done.left += len(f.keys)
		}
		done.leftNamespaces = len(found) - MaxStaleNamespaces
		found = found[:MaxStaleNamespaces]
		s.log.Info("records of rules that are gone left to the next sweep", "namespaces", done.leftNamespaces, "records", done.left, "maxNamespaces", MaxStaleNamespaces)
	}
	var removed atomic.Int64
	r.bounded(len(found), func(i int) {
		if r.stop.Err() != nil {
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
		attrs := []any{"namespace", f.namespace, "records", len(f.keys), "dryRun", s.cfg.DryRun}
		if err := s.writer.PatchNamespace(ctx, f.namespace, write.JSONPatch("", ops...)); err != nil {
			s.log.Warn("the records of rules that are gone were not removed", append(attrs, "error", err.Error())...)
			return
		}
		s.log.Info("removed the records of rules that are gone", attrs...)
		removed.Add(int64(len(f.keys)))
	})
	done.removed = int(removed.Load())
	return done
}
