package memory

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// gcPercent is nsman's garbage-collection target when GOGC is not set. A
// sweep's live heap is small next to what it allocates decoding each page of
// managers, and the heap peaks at live × (1 + GOGC/100): at 50 instead of
// Go's 100 a sweep of 10,000 managers peaks about 6 MiB lower (BENCHMARKS.md)
// for a GC share of CPU that stays in the low percent.
const gcPercent = 50

// heapFloor is the heap goal below which nsman does not collect. At
// gcPercent alone Go's goal starts at 2 MiB (its 4 MiB minimum × 50 %): a
// no-op sweep of a rule over 1,000 namespaces (make bench's traffic part),
// whose live heap stays under 5 MiB, collected ten times, a quarter of its
// CPU, to save a few MiB next to the 25 MiB the binary takes before it
// allocates. At 8 MiB it collected three times, at 16 MiB once: its CPU
// 63 ms and peak RSS 37.7 MiB at 8, 57.5 ms and 42.2 MiB at 16 (with no
// collection at all, 54.5 ms and 42.5 MiB; means of 12 runs each, the
// machine loaded). Above a live heap of heapFloor / 1.5 the goal is
// gcPercent's, so the peak of a large sweep is as before.
const heapFloor = 16 << 20

// startPercent makes the runtime's first goal heapFloor: its minimum
// heap goal is 4 MiB at GOGC=100, scaled by the GC percent
// (runtime.heapMinimum).
const startPercent = heapFloor * 100 / (4 << 20)

// SetGCPercent applies gcPercent, with heapFloor, unless the GOGC
// environment variable says otherwise. The nsman command calls it before
// anything else.
func SetGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		floorGC()
	}
}

// floorGC sets the GC percent to startPercent, then after each collection
// to percentFor the live heap, until stop is called.
func floorGC() (stop func()) {
	var stopped atomic.Bool
	debug.SetGCPercent(startPercent)
	afterEachGC(func() bool {
		if !stopped.Load() {
			debug.SetGCPercent(percentFor(liveHeap()))
		}
		return !stopped.Load()
	})
	return func() { stopped.Store(true) }
}

// percentFor is the GC percent whose goal for a live heap of live bytes is
// gcPercent's, but not below heapFloor; gcPercent's when live is not known
// (0).
func percentFor(live uint64) int {
	if live == 0 {
		return gcPercent
	}
	return max(gcPercent, int(heapFloor*100/live)-100)
}

// liveHeap is the heap the last collection marked live, 0 when the runtime
// does not say.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// sentinel is an object made only to be collected; it holds a pointer, so
// that the runtime's tiny allocator, whose objects may never be
// finalized, does not take it.
type sentinel struct{ _ *byte }

// afterEachGC calls fn after each collection, on the finalizer goroutine,
// for as long as it returns true: a sentinel unreachable from the start is
// finalized by the next collection, and its finalizer makes the next one.
func afterEachGC(fn func() bool) {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if fn() {
			afterEachGC(fn)
		}
	})
}
