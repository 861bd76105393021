package nsmantest

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithLauncher has cmd killed when the launcher dies (a test that timed
// out, a cancelled context): a sweep left running would go on acting on
// the test's cluster. The signal follows the thread that started the
// child, so the caller's goroutine stays on it.
func dieWithLauncher(cmd *exec.Cmd) {
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
