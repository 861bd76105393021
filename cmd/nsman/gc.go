package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is nsman's garbage-collection target when GOGC is not set. A
// sweep's live heap is small next to what it allocates decoding each page of
// managers, and the heap peaks at live × (1 + GOGC/100): at 50 instead of
// Go's 100 a sweep of 10,000 managers peaks about 6 MiB lower (BENCHMARKS.md)
// for a GC share of CPU that stays in the low percent.
const gcPercent = 50

// setGCPercent applies gcPercent unless the GOGC environment variable says
// otherwise. main calls it before anything else.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}
