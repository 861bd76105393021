package nsmantest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// launchEnv, when set, makes a test binary a launcher (see ServeLaunch):
// it runs the command in its arguments and writes the command's wall time,
// peak RSS and exit code, as JSON, to the file the variable names.
//
// nsman's peak RSS cannot be read from a child of the test process itself:
// Go starts children with vfork, and on exec Linux carries the high-water
// RSS of the address space the child shared, the test process's, over into
// the child's maxrss, so every child would report at least the test
// process's peak. The launcher is a fresh process that stays small; what it
// reports is nsman's own peak (or the launcher's, some 10 to 25 MiB, if
// that were higher).
const launchEnv = "NSMAN_TEST_LAUNCH_RESULT"

// LauncherRSSMiB is about the launcher's own peak RSS: a child's figure
// cannot be told apart from it below that.
const LauncherRSSMiB = 24

// Launched is what the launcher measured of a command.
type Launched struct {
	Wall   time.Duration
	MaxRSS int64 // KiB
	Code   int
}

// ServeLaunch makes this test binary the launcher when it was started as
// one, and then exits; otherwise it returns. A TestMain that measures with
// Launch calls it first.
func ServeLaunch() {
	if out := os.Getenv(launchEnv); out != "" {
		os.Exit(launch(out, os.Args[1:]))
	}
}

func launch(out string, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "launcher: no command")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, launchEnv+"=") })
	dieWithLauncher(cmd)
	began := time.Now()
	err := cmd.Run()
	res := Launched{Wall: time.Since(began)}
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

// Launch runs command through the launcher, this test binary started
// afresh (its TestMain must call ServeLaunch first), with its output to
// stdout and stderr (discarded when nil), and returns what the launcher
// measured. A command that exits non-zero is no error: see Launched.Code.
func Launch(ctx context.Context, stdout, stderr io.Writer, command ...string) (Launched, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("nsman-launch-%d-%d.json", os.Getpid(), launches.Add(1)))
	defer os.Remove(out)
	self, err := os.Executable()
	if err != nil {
		return Launched{}, err
	}
	cmd := exec.CommandContext(ctx, self, command...)
	cmd.Env = append(os.Environ(), launchEnv+"="+out)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return Launched{}, fmt.Errorf("launcher: %w", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return Launched{}, fmt.Errorf("launcher result: %w", err)
	}
	var res Launched
	err = json.Unmarshal(data, &res)
	return res, err
}

// launches numbers the launcher's result files.
var launches atomic.Int64
