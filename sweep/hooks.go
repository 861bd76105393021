package sweep

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/record"
)

// hookJob is a manager's WEBHOOK decision, to carry out.
type hookJob struct {
	l   listpage.Listed
	rec record.Record
	d   decide.Decision
	// first: its last delivery was deferred (a receiver silent earlier in
	// its sweep, or the sweep's time for silent receivers spent); rank is
	// its namespace's place in this sweep's rotation (see execute.Rotation); seq
	// the order it was queued in.
	first bool
	rank  uint64
	seq   int
}

// hookQueue holds the WEBHOOK decisions not carried out yet, and hands
// them to the webhook workers in an order that rotates across namespaces
// from sweep to sweep: first those whose last delivery was deferred, then
// by namespace from a point of a ring of namespaces (their hashes) that
// moves each minute, then as queued. Deliveries past what a sweep waits on
// silent receivers are deferred (see webhook.Options.Workers), so that the
// order decides whose go first: each namespace's in turn, never the same
// namespaces' for the same names. (What the idle workers take before the
// queue fills goes as evaluated.) Unbounded, rather than a channel, so
// that an evaluating worker never waits on a receiver: the jobs are small,
// and no more than the managers listed.
type hookQueue struct {
	mu     sync.Mutex
	ready  *sync.Cond
	jobs   hookHeap
	closed bool
	// offset is this sweep's point of the ring (see execute.Rotation); queued
	// counts the jobs put.
	offset uint64
	queued int
}

// namespaceRank is namespace's place in a sweep that starts at offset: its
// hash, counted round the ring from offset. SHA-256, not FNV, whose high
// bits hardly differ for names that differ in their last letters
// (team-14, team-15): they would sit side by side on the ring.
func namespaceRank(namespace string, offset uint64) uint64 {
	sum := sha256.Sum256([]byte(namespace))
	return binary.BigEndian.Uint64(sum[:8]) - offset
}

func (h *hookQueue) put(j hookJob) {
	last := j.rec.Prior().Last
	j.first = last != nil && last.Deferred && j.d.Plan != nil && last.Policy == j.d.Plan.Policy.Name
	h.mu.Lock()
	j.rank, j.seq = namespaceRank(j.d.Manager.Namespace, h.offset), h.queued
	h.queued++
	heap.Push(&h.jobs, j)
	h.mu.Unlock()
	h.ready.Signal()
}

// take returns the next job, waiting for one; false once the queue is
// closed and empty.
func (h *hookQueue) take() (hookJob, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.jobs) == 0 && !h.closed {
		h.ready.Wait()
	}
	if len(h.jobs) == 0 {
		return hookJob{}, false
	}
	return heap.Pop(&h.jobs).(hookJob), true
}

func (h *hookQueue) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.ready.Broadcast()
}

// hookHeap orders jobs as hookQueue hands them out (container/heap).
type hookHeap []hookJob

func (h hookHeap) Len() int { return len(h) }

func (h hookHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	switch {
	case a.first != b.first:
		return a.first
	case a.rank != b.rank:
		return a.rank < b.rank
	}
	return a.seq < b.seq
}

func (h hookHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *hookHeap) Push(x any) { *h = append(*h, x.(hookJob)) }

func (h *hookHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = hookJob{}
	*h = old[:len(old)-1]
	return j
}
