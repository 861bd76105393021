//go:build !linux

package nsmantest

import "os/exec"

// dieWithLauncher does nothing where the kernel has no parent-death signal.
func dieWithLauncher(*exec.Cmd) {}
