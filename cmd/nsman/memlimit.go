package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitShare is the share of its container's memory limit that a
// sweep keeps its heap under (Go's soft memory limit): the rest is for
// what Go does not count (stacks aside, the binary and the kernel's
// buffers), so that the GC works harder near the limit rather than the
// kernel killing the sweep.
const memoryLimitShare = 0.85

// cgroupRoot is where the container's cgroup is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// setMemoryLimit sets Go's soft memory limit to memoryLimitShare of the
// memory limit of nsman's cgroup, mounted at root (cgroupRoot), unless the
// GOMEMLIMIT environment variable says otherwise or there is no limit, and
// returns the limit set (0: none). main calls it before anything else.
func setMemoryLimit(root string) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit, ok := cgroupMemoryLimit(root)
	if !ok {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// cgroupMemoryLimit reads the memory limit of the cgroup mounted at root:
// memory.max under cgroup v2, memory/memory.limit_in_bytes under v1. It is
// read by hand rather than with a library (automemlimit): two files, and no
// dependency to keep.
func cgroupMemoryLimit(root string) (int64, bool) {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(data))
		if v == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		// v1 says "no limit" with a number near the largest int64.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
