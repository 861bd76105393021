package cluster

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Main runs a test package's tests against one control plane of the given
// tier, which *shared points to while they run, and exits with their result.
// Call it from TestMain. The control plane is stopped when the tests end,
// fail or panic, and when the process is interrupted; if the process dies
// without running its deferred calls (SIGKILL, a test timeout) the kernel
// kills the components.
func Main(m *testing.M, tier Tier, shared **Cluster) {
	os.Exit(run(m.Run, tier, shared))
}

func run(tests func() int, tier Tier, shared **Cluster) int {
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupted)

	c, err := Start(context.Background(), Options{Tier: tier})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start %s control plane: %v\n", tier, err)
		return 1
	}
	defer c.Stop()
	go func() {
		sig := <-interrupted
		fmt.Fprintf(os.Stderr, "%v: stopping the control plane\n", sig)
		c.Stop()
		os.Exit(130)
	}()
	fmt.Fprintf(os.Stderr, "%s control plane ready in %s (%s)\n", tier, c.StartupTime.Round(1e6), c.Dir)
	*shared = c
	return tests()
}
