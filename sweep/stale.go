package sweep

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// StaleRecordAge is how long ago a record of a rule that is gone must have
// been written last for a sweep to remove it. A rule created after a sweep
// listed the managers may have written records that sweep finds; an hour is
// far beyond any sweep.
const StaleRecordAge = time.Hour

// removeStaleRecords removes from the namespaces of this shard the records,
// written last more than StaleRecordAge ago, of rules not among managers
// (every manager's UID: one that is no rule now may be one again), which a
// deleted rule leaves behind; each if it is still as listed, Concurrency at
// a time, none after an interrupt. Failures are logged. It returns how many
// it removed (would remove, in a dry run).
func (s *Sweeper) removeStaleRecords(ctx context.Context, r *sweepRun, managers map[types.UID]bool) int {
	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return 0
	}
	type stale struct{ namespace, key, record string }
	var found []stale
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		ns := namespaces[name]
		if len(ns.pairs) == 0 || ns.terminating || ShardOf(ns.uid, s.cfg.ShardCount) != s.cfg.ShardIndex {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(ns.pairs)) {
			if managers[types.UID(strings.TrimPrefix(key, PairAnnotationPrefix))] {
				continue
			}
			// A record that holds no time (edited by hand, say) stays.
			if last := decodePair(ns.pairs[key]).lastTime(); !last.IsZero() && last.Before(r.now.Add(-StaleRecordAge)) {
				found = append(found, stale{name, key, ns.pairs[key]})
			}
		}
	}
	var removed atomic.Int64
	r.bounded(len(found), func(i int) {
		if r.stop.Err() != nil {
			return
		}
		f := found[i]
		path := annotationPointer(f.key)
		attrs := []any{"namespace", f.namespace, "annotation", f.key, "dryRun", s.cfg.DryRun}
		if err := s.writer.patchNamespace(ctx, f.namespace, jsonPatch("", patchOp{"test", path, f.record}, patchOp{Op: "remove", Path: path})); err != nil {
			s.log.Warn("the record of a rule that is gone was not removed", append(attrs, "error", err.Error())...)
			return
		}
		s.log.Info("removed the record of a rule that is gone", attrs...)
		removed.Add(1)
	})
	return int(removed.Load())
}
