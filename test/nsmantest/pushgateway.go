package nsmantest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	// No --persistence.file: the Pushgateway keeps what is pushed in
	// memory, and each test starts from an empty one.
	args := []string{"--web.listen-address=" + addr, "--log.level=warn"}
	url := "http://" + addr
	s, err := startServer(t.Context(), bin, args, url+"/-/ready", pushgatewayStartTimeout)
	if err != nil {
		return "", fmt.Errorf("pushgateway on %s: %w", addr, err)
	}
	t.Cleanup(s.stop)
	return url, nil
}
