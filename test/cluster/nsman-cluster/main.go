// Command nsman-cluster keeps a control plane from package cluster running
// for people: "up" starts it in the background and prints KUBECONFIG=<path>
// as its last line, "down" stops it. The Makefile's cluster-up and
// cluster-down targets call it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nsman/nsman/test/cluster"
)

const usage = `usage: nsman-cluster [-dir DIR] [-tier full|api] up|down

up    start a control plane in the background, print KUBECONFIG=<path> last
down  stop it
`

func main() {
	dir := flag.String("dir", ".cluster", "directory for the control plane's state, logs and kubeconfig")
	tier := flag.String("tier", "full", "components to run: api (etcd, kube-apiserver) or full (+ controller manager, scheduler, kwok)")
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage); flag.PrintDefaults() }
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	abs, err := filepath.Abs(*dir)
	if err == nil {
		switch flag.Arg(0) {
		case "up":
			err = up(abs, *tier)
		case "down":
			err = down(abs)
		case "serve":
			err = serve(abs, *tier)
		default:
			flag.Usage()
			os.Exit(2)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nsman-cluster: %v\n", err)
		os.Exit(1)
	}
}

// Files in the state directory.
const (
	pidFile   = "serve.pid"
	readyFile = "ready"
	logFile   = "serve.log"
)

func up(dir, tier string) error {
	if pid, ok := running(dir); ok {
		fmt.Fprintf(os.Stderr, "control plane already running (pid %d)\n", pid)
		return printKubeconfig(dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(dir, logFile))
	if err != nil {
		return err
	}
	defer log.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	serve := exec.Command(self, "-dir", dir, "-tier", tier, "serve")
	serve.Stdout, serve.Stderr = log, log
	// A session of its own, so that the control plane outlives this command
	// and the terminal it ran in.
	serve.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := serve.Start(); err != nil {
		return err
	}
	pid := serve.Process.Pid
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	fmt.Fprintf(os.Stderr, "starting a %s control plane in %s (log: %s)\n", tier, dir, log.Name())
	for {
		select {
		case err := <-exited:
			data, _ := os.ReadFile(log.Name())
			return fmt.Errorf("control plane exited (%v):\n%s", err, data)
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := os.Stat(filepath.Join(dir, readyFile)); err == nil {
			data, _ := os.ReadFile(log.Name())
			fmt.Fprint(os.Stderr, string(data))
			return printKubeconfig(dir)
		}
	}
}

func printKubeconfig(dir string) error {
	path := filepath.Join(dir, "kubeconfig")
	if _, err := os.Stat(path); err != nil {
		return err
	}
	fmt.Printf("KUBECONFIG=%s\n", path)
	return nil
}

// serve runs the control plane in the foreground until SIGTERM or SIGINT.
func serve(dir, tierName string) error {
	tier, err := cluster.ParseTier(tierName)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(ctx, cluster.Options{Tier: tier, Dir: dir})
	if err != nil {
		return err
	}
	defer c.Stop()
	fmt.Printf("%s control plane ready in %s\n", tier, c.StartupTime.Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(dir, readyFile), nil, 0o600); err != nil {
		return err
	}
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}

func down(dir string) error {
	pid, ok := running(dir)
	if !ok {
		fmt.Fprintln(os.Stderr, "no control plane running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for cluster.ProcessAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return errors.New("control plane did not stop within 30s: killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "control plane stopped")
	return os.Remove(filepath.Join(dir, pidFile))
}

// running returns the pid of a live serve process for dir.
func running(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !cluster.ProcessAlive(pid) {
		return 0, false
	}
	return pid, true
}
