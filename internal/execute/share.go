package execute

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nsman/nsman/report"
)

// FairShare hands out the places of --max-actions round-robin across the
// namespaces acted on: every subject that wants one is offered first, and
// the places go one per namespace per round (a namespace's subjects, and
// the namespaces in a round, in an order drawn anew for each sweep), so
// that one namespace with many due managers takes no more than any other,
// and no namespace or subject is last in every sweep: names a tenant
// chooses win no place. It keeps the max subjects first
// in that order, and pushes out the one that falls beyond: the order of the
// offers makes no difference, and what it holds is bounded: max subjects,
// and a key for each namespace with one pushed out.
//
// A subject pushed out never comes back: its rank in its namespace only
// grows as offers come, and the last place kept only moves forward.
//
// Rounds rather than a share of ceil(max / namespaces) each: which
// namespaces have an action due is known only once every subject is
// evaluated, and a fixed share would leave unused the places of namespaces
// with fewer due than their share, where rounds give them to the others.
type FairShare struct {
	mu  sync.Mutex
	max int
	// salt draws this sweep's order (see rank).
	salt string
	// kept holds the subjects placed so far by namespace rank, each in the
	// order of its key's rank (see rank); n counts them.
	kept map[string][]*candidate
	n    int
	// cut is, by namespace rank, the least key rank pushed out: a later
	// offer of a key after it is beyond the cap too.
	cut map[string]string
}

// candidate is one subject offered a place: namespace is the namespace it
// acts on, key names it there (its manager's, or its rule's, namespace/name),
// and carryOut carries out its decision, granted a place or deferred.
type candidate struct {
	namespace, key string
	carryOut       func(granted bool)
	// nsRank and keyRank are namespace and key ranked for this sweep.
	nsRank, keyRank string
}

// NewFairShare shares max places in the order that salt, the sweep's ID,
// draws; "" keeps the order of the names.
func NewFairShare(max int, salt string) *FairShare {
	return &FairShare{max: max, salt: salt, kept: map[string][]*candidate{}, cut: map[string]string{}}
}

// rank is name's place in this sweep's order: a hash of the salt and the
// name, then the name (unique, whatever the hash); the name alone when
// there is no salt.
func (f *FairShare) rank(name string) string {
	if f.salt == "" {
		return name
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(f.salt))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("%016x/%s", h.Sum64(), name)
}

// offer places c, and returns the candidate pushed out, c itself or one
// placed before, to be deferred; nil while the places last.
func (f *FairShare) offer(c *candidate) *candidate {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.nsRank, c.keyRank = f.rank(c.namespace), f.rank(c.key)
	if cut, ok := f.cut[c.nsRank]; ok && c.keyRank > cut {
		return c
	}
	kept := f.kept[c.nsRank]
	i, _ := slices.BinarySearchFunc(kept, c.keyRank, func(k *candidate, key string) int { return strings.Compare(k.keyRank, key) })
	f.kept[c.nsRank] = slices.Insert(kept, i, c)
	if f.n++; f.n <= f.max {
		return nil
	}
	// The last of all is the last of the namespace that holds the most,
	// the last by rank of those that hold as many.
	last := ""
	for ns, cs := range f.kept {
		if len(cs) > len(f.kept[last]) || len(cs) == len(f.kept[last]) && ns > last {
			last = ns
		}
	}
	cs := f.kept[last]
	out := cs[len(cs)-1]
	f.kept[last] = cs[:len(cs)-1]
	if len(f.kept[last]) == 0 {
		delete(f.kept, last)
	}
	f.n--
	if cut, ok := f.cut[last]; !ok || out.keyRank < cut {
		f.cut[last] = out.keyRank
	}
	return out
}

// beyond reports whether a subject keyed key in namespace would be pushed
// out were it offered now (its plan is deferred anyway); never for one
// placed already.
func (f *FairShare) beyond(namespace, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	namespace, key = f.rank(namespace), f.rank(key)
	if cut, ok := f.cut[namespace]; ok && key > cut {
		return true
	}
	kept := f.kept[namespace]
	if _, placed := slices.BinarySearchFunc(kept, key, func(k *candidate, key string) int { return strings.Compare(k.keyRank, key) }); placed {
		return false
	}
	if f.n < f.max || len(kept) > 0 && key < kept[len(kept)-1].keyRank {
		return false
	}
	for ns, cs := range f.kept {
		if ns != namespace && (len(cs) > len(kept)+1 || len(cs) == len(kept)+1 && ns > namespace) {
			return false
		}
	}
	return true
}

// granted returns the subjects placed, round by round.
func (f *FairShare) granted() []*candidate {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []*candidate
	for round := 0; len(all) < f.n; round++ {
		for _, ns := range slices.Sorted(maps.Keys(f.kept)) {
			if cs := f.kept[ns]; round < len(cs) {
				all = append(all, cs[round])
			}
		}
	}
	return all
}

// BeyondCap reports whether the subject of entry e would be deferred by
// --max-actions were its plan offered now.
func (f *FairShare) BeyondCap(e report.Entry) bool {
	return f.max > 0 && f.beyond(e.Target, e.Namespace+"/"+e.Name)
}
