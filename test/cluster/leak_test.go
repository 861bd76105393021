package cluster

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The leak test re-runs this test binary as a child that starts an API tier
// through run (as Main does) and then ends in one of these ways.
const (
	childModeEnv = "NSMAN_CLUSTER_LEAK_CHILD"
	childPidsEnv = "NSMAN_CLUSTER_LEAK_PIDS"
)

// leakChild is the child's whole life: start, record the component pids,
// wait for the parent to have checked them (a line on stdin), then end as
// mode says.
func leakChild(mode string) int {
	var c *Cluster
	return run(func() int {
		var pids []string
		for _, pid := range c.Pids() {
			pids = append(pids, strconv.Itoa(pid))
		}
		if err := os.WriteFile(os.Getenv(childPidsEnv), []byte(strings.Join(pids, " ")), 0o600); err != nil {
			return 3
		}
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return 4
		}
		switch mode {
		case "pass":
			return 0
		case "fail":
			return 1
		case "panic":
			panic("a test panicked")
		case "kill":
			// Like a test timeout or an OOM kill: no deferred call runs.
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		select {} // "interrupt": wait for the parent's SIGINT
	}, APITier, &c)
}

func TestNoProcessOutlivesTheTests(t *testing.T) {
	for _, mode := range []string{"pass", "fail", "panic", "interrupt", "kill"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pids")
			// The child's state directory goes under its own TMPDIR, which
			// the test removes: a killed child cannot remove it itself.
			tmp := t.TempDir()
			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), childModeEnv+"="+mode, childPidsEnv+"="+pidFile, "TMPDIR="+tmp)
			var out bytes.Buffer
			child.Stdout, child.Stderr = &out, &out
			proceed, err := child.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- child.Wait() }()

			var pids []int
			deadline := time.After(time.Minute)
			for len(pids) == 0 {
				select {
				case err := <-exited:
					t.Fatalf("child exited (%v) before starting its control plane:\n%s", err, out.String())
				case <-deadline:
					_ = child.Process.Kill()
					t.Fatalf("child started no control plane within a minute:\n%s", out.String())
				case <-time.After(100 * time.Millisecond):
				}
				pids = readPids(pidFile)
			}
			if len(pids) != 2 {
				t.Fatalf("child recorded pids %v, want etcd and kube-apiserver", pids)
			}
			for _, pid := range pids {
				if !ProcessAlive(pid) {
					t.Fatalf("component %d not running while the child runs", pid)
				}
			}
			if _, err := io.WriteString(proceed, "end\n"); err != nil {
				t.Fatal(err)
			}
			if mode == "interrupt" {
				_ = child.Process.Signal(os.Interrupt)
			}
			select {
			case <-exited:
			case <-time.After(time.Minute):
				_ = child.Process.Kill()
				t.Fatalf("child did not exit:\n%s", out.String())
			}
			// The kernel's parent-death signal is delivered asynchronously.
			gone := time.Now().Add(10 * time.Second)
			for _, pid := range pids {
				for ProcessAlive(pid) && time.Now().Before(gone) {
					time.Sleep(50 * time.Millisecond)
				}
				if ProcessAlive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("component %d still running after the child ended (%s)", pid, mode)
				}
			}
			// Stop removes the state directory; only a killed child leaves
			// it, in the TMPDIR given it.
			left, err := filepath.Glob(filepath.Join(tmp, "nsman-cluster-*"))
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if mode == "kill" {
				want = 1
			}
			if len(left) != want {
				t.Errorf("state directories left in the child's TMPDIR after it ended (%s): %v, want %d", mode, left, want)
			}
		})
	}
}

func readPids(path string) []int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
