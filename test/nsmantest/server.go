package nsmantest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/nsman/nsman/test/cluster"
)

// server is a pinned tool that a test runs as a child process serving HTTP
// on loopback: the Pushgateway, Prometheus.
type server struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has ended
	waitErr error         // how it ended; read after done closes
	logs    syncBuffer
}

// startServer starts bin with args and waits until readyURL answers 200,
// for at most timeout. On error nothing is left running, and the error
// carries the process's output.
func startServer(ctx context.Context, bin string, args []string, readyURL string, timeout time.Duration) (*server, error) {
	s := &server{done: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{}
	cluster.SetParentDeathSignal(s.cmd.SysProcAttr) // dies with a killed test binary
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	if err := waitReady(ctx, readyURL, s.done, timeout); err != nil {
		s.stop()
		if s.waitErr != nil {
			err = fmt.Errorf("%w (%v)", err, s.waitErr)
		}
		return nil, fmt.Errorf("%w; its output:\n%s", err, s.logs.String())
	}
	return s, nil
}

// stop kills the process unless it has ended already, and waits for it.
// It may be called more than once.
func (s *server) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// waitReady polls url until it answers 200, the process ends (done closes)
// or timeout passes.
func waitReady(ctx context.Context, url string, done <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %w", timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// syncBuffer is a bytes.Buffer that a process may write while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
