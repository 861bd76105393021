package cluster

import "syscall"

// setParentDeathSignal makes the kernel SIGKILL the child when the process that
// started it dies, however it dies.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
