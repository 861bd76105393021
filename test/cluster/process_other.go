//go:build !linux

package cluster

import "syscall"

// SetParentDeathSignal is a no-op where the kernel offers no parent-death
// signal; Stop and Main's signal handling still stop every process.
func SetParentDeathSignal(*syscall.SysProcAttr) {}
