package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	write := func(t *testing.T, file, content string) string {
		t.Helper()
		root := t.TempDir()
		path := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	const chart = 128 << 20 // the chart's limit, 128Mi
	share := memoryLimitShare
	want := int64(float64(chart) * share)
	for _, c := range []struct {
		name, file, content string
		want                int64
	}{
		{"cgroup v2", "memory.max", "134217728\n", want},
		{"cgroup v2 without a limit", "memory.max", "max\n", 0},
		{"cgroup v1", "memory/memory.limit_in_bytes", "134217728\n", want},
		{"cgroup v1 without a limit", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		{"no cgroup", "elsewhere", "134217728\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "")
			if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
				t.Fatal(err)
			}
			debug.SetMemoryLimit(math.MaxInt64)
			if got := setMemoryLimit(write(t, c.file, c.content)); got != c.want {
				t.Errorf("limit set %d, want %d", got, c.want)
			}
			wantRuntime := c.want
			if wantRuntime == 0 {
				wantRuntime = math.MaxInt64
			}
			if got := debug.SetMemoryLimit(-1); got != wantRuntime {
				t.Errorf("runtime's memory limit %d, want %d", got, wantRuntime)
			}
		})
	}
	t.Run("GOMEMLIMIT set", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "50MiB")
		debug.SetMemoryLimit(math.MaxInt64)
		if got := setMemoryLimit(write(t, "memory.max", "134217728\n")); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
			t.Errorf("GOMEMLIMIT set: limit %d set, want it left to the runtime", got)
		}
	})
}
