package cluster

import "syscall"

// SetParentDeathSignal makes the kernel SIGKILL the child when the process that
// started it dies, however it dies. Test helpers that start servers use it.
func SetParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
