package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one control-plane component running in its own process group,
// with its output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// done is closed once the process has exited; err holds how.
	done chan struct{}
	err  error
}

// startProcess runs path with args, logging to dir/name.log. The process gets
// its own process group (so stop reaches its children) and is killed by the
// kernel if this process dies first (see SetParentDeathSignal), which is what
// keeps a panicking or killed test binary from leaking it.
func startProcess(dir, name, path string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	SetParentDeathSignal(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process group to terminate and kills it after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
}

// failure describes an unexpected exit, with the end of the log.
func (p *process) failure() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, p.err, p.logPath, p.tail(20))
}

// tail returns the last n lines of the process log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// errExited is returned by waits that end because a component died.
var errExited = errors.New("component exited")

// ProcessAlive reports whether pid is a running process. A zombie, dead but
// not yet reaped by its parent, does not count.
func ProcessAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: ask the kernel
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
