package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nsman/nsman/test/nsmantest"
)

func TestMain(m *testing.M) {
	nsmantest.ServeLaunch()
	os.Exit(m.Run())
}

// TestLauncherReportsTheChildsOwnPeak checks the reason for the launcher:
// with the driver holding 200 MiB, a child started through it reports its
// own small peak, where one started directly inherits the driver's.
func TestLauncherReportsTheChildsOwnPeak(t *testing.T) {
	ballast := make([]byte, 200<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	direct := exec.Command("true")
	if err := direct.Run(); err != nil {
		t.Fatal(err)
	}
	res, err := nsmantest.Launch(t.Context(), nil, nil, "true")
	if err != nil {
		t.Fatal(err)
	}
	directRSS := direct.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	t.Logf("peak RSS of `true` with a 200 MiB driver: %d KiB started directly, %d KiB through the launcher", directRSS, res.MaxRSS)
	if directRSS < 200<<10 {
		t.Logf("this kernel does not carry the driver's peak over; the launcher is harmless")
	}
	// Half the ballast: the launcher's own peak is some 24 MiB, about 50 MiB
	// when the tests run with -race (make test-unit), never the driver's.
	if res.MaxRSS > int64(len(ballast)>>10)/2 {
		t.Errorf("through the launcher: %d KiB, the driver's peak carried over; want the launcher's own", res.MaxRSS)
	}
	_ = ballast[len(ballast)-1]
}

// A command started through the launcher dies with it: a cancelled
// measurement leaves no sweep running on the cluster.
func TestLaunchedCommandDiesWithTheLauncher(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := nsmantest.Launch(ctx, nil, nil, "sh", "-c", `echo $$ > "$0"; exec sleep 30`, pidFile)
	if err == nil {
		t.Fatal("the launch outlived its context")
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Gone, or a zombie that whoever adopted it has not reaped yet.
	running := func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		_, after, _ := strings.Cut(string(stat), ") ")
		return !strings.HasPrefix(after, "Z")
	}
	deadline := time.Now().Add(5 * time.Second)
	for running() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs after its launcher was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
