package memory

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gogc is the GC percent in effect.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	SetGCPercent()
	if got := gogc(); got != 200 {
		t.Errorf("GOGC=200 set: GC percent changed to %d, want it left to the runtime", got)
	}
}

// The goal is gcPercent's over the live heap, but not below heapFloor: a
// small heap is not collected every 2 MiB allocated.
func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, gcPercent}, // not known
		{1 << 20, 1500},
		{8 << 20, 100},
		{10 << 20, 60},
		{heapFloor * 2 / 3, gcPercent},
		{heapFloor, gcPercent},
		{1 << 30, gcPercent},
	} {
		if got := percentFor(c.live); got != c.want {
			t.Errorf("live %d MiB: %d %%, want %d", c.live>>20, got, c.want)
		}
		if goal := c.live * uint64(100+percentFor(c.live)) / 100; c.live > 0 && goal < heapFloor*99/100 {
			t.Errorf("live %d MiB: goal %d MiB, under the floor", c.live>>20, goal>>20)
		}
	}
}

// With GOGC unset, the first goal is heapFloor, and after each collection
// the percent follows the live heap: above the floor, nsman's gcPercent;
// once stopped, it stays as it was left.
func TestFloorGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	stop := floorGC()
	defer stop()
	if got := gogc(); got != startPercent {
		t.Errorf("at start: GC percent %d, want %d (a first goal of %d MiB)", got, startPercent, heapFloor>>20)
	}
	collected := func(want func(int) bool) int {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			runtime.GC()
			if got := gogc(); want(got) || time.Now().After(deadline) {
				return got
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := collected(func(p int) bool { return p > gcPercent && p != startPercent }); got != percentFor(liveHeap()) {
		t.Errorf("small live heap (%d KiB): GC percent %d, want %d", liveHeap()>>10, got, percentFor(liveHeap()))
	}
	live := make([]byte, 2*heapFloor)
	if got := collected(func(p int) bool { return p == gcPercent }); got != gcPercent {
		t.Errorf("live heap of %d MiB: GC percent %d, want %d", liveHeap()>>20, got, gcPercent)
	}
	runtime.KeepAlive(live)
}
