package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// launchEnv, when set, makes the test binary a launcher: it runs the
// command in its arguments and writes the command's wall time, peak RSS and
// exit code, as JSON, to the file the variable names.
//
// nsman's peak RSS cannot be read from a child of the driver itself: Go
// starts children with vfork, and on exec Linux carries the high-water RSS
// of the address space the child shared, the driver's, over into the
// child's maxrss, so every child would report at least the driver's peak.
// The launcher is a fresh process that stays small; what it reports is
// nsman's own peak (or the launcher's, some 10 MiB, if that were higher).
const launchEnv = "NSMAN_BENCH_LAUNCH_RESULT"

// launcherRSSMiB is about the launcher's own peak RSS: a child's figure
// cannot be told apart from it below that.
const launcherRSSMiB = 24

type launched struct {
	Wall   time.Duration
	MaxRSS int64 // KiB
	Code   int
}

func TestMain(m *testing.M) {
	if out := os.Getenv(launchEnv); out != "" {
		os.Exit(launch(out, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func launch(out string, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "launcher: no command")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	began := time.Now()
	err := cmd.Run()
	res := launched{Wall: time.Since(began)}
	if cmd.ProcessState == nil {
		fmt.Fprintf(os.Stderr, "launcher: %v\n", err)
		return 2
	}
	res.Code = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSS = ru.Maxrss
	}
	data, err := json.Marshal(res)
	if err == nil {
		err = os.WriteFile(out, data, 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "launcher: %v\n", err)
		return 2
	}
	return 0
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
	res, err := launchAndWait(t.Context(), nil, []string{"true"})
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
