package nsmantest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nsman/nsman/test/cluster"
)

// pushgatewayModule is the module that test/tools/pushgateway pins and
// test/tools/build.sh builds into the user cache.
const pushgatewayModule = "github.com/prometheus/pushgateway"

// pushgatewayStartTimeout bounds how long the Pushgateway may take to be ready.
const pushgatewayStartTimeout = 30 * time.Second

// StartPushgateway runs the pinned Prometheus Pushgateway on a free loopback
// port, without persistence, and returns its URL (http://127.0.0.1:PORT). It
// is stopped when t ends. The binary comes from `make control-plane`.
func StartPushgateway(t testing.TB) (url string) {
	t.Helper()
	bin, err := pushgatewayBinary()
	if err != nil {
		t.Fatal(err)
	}
	// The port is free when asked for but could be taken before the
	// Pushgateway binds it; a start that fails that way is tried again.
	var errs []error
	for range 3 {
		url, err := startPushgateway(t, bin)
		if err == nil {
			return url
		}
		errs = append(errs, err)
	}
	t.Fatalf("start the Pushgateway: %v", errors.Join(errs...))
	return ""
}

// pushgatewayBinary is where test/tools/build.sh puts the pinned Pushgateway.
func pushgatewayBinary() (string, error) {
	dir, err := cluster.ToolDir("pushgateway", pushgatewayModule, "pushgateway")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "pushgateway")
	if _, err := os.Stat(bin); err != nil {
		return "", cluster.MissingTool(bin)
	}
	return bin, nil
}

// startPushgateway starts bin once and waits until it is ready; on error
// nothing is left running.
func startPushgateway(t testing.TB, bin string) (string, error) {
	port, err := cluster.FreePort()
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var logs syncBuffer
	// No --persistence.file: the Pushgateway keeps what is pushed in
	// memory, and each test starts from an empty one.
	cmd := exec.Command(bin, "--web.listen-address="+addr, "--log.level=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	cluster.SetParentDeathSignal(cmd.SysProcAttr) // dies with a killed test binary
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	stop := func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	}

	url := "http://" + addr
	if err := waitReady(t.Context(), url+"/-/ready", done); err != nil {
		stop()
		if waitErr != nil {
			err = fmt.Errorf("%w (%v)", err, waitErr)
		}
		return "", fmt.Errorf("pushgateway on %s: %w; its output:\n%s", addr, err, logs.String())
	}
	t.Cleanup(stop)
	return url, nil
}

// waitReady polls url until it answers 200, the process ends (done closes)
// or the start timeout passes.
func waitReady(ctx context.Context, url string, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, pushgatewayStartTimeout)
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
			return fmt.Errorf("not ready: %w", ctx.Err())
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
