// Command nsman manages the lifecycle of Kubernetes namespaces from
// NamespaceManager resources.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// The IANA time-zone database, for policies' windows
	// (spec.policies[].windows[].timeZone), used only where the system has
	// none: distroless static carries no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/memory"
	"github.com/nsman/nsman/internal/roots"
)

func main() {
	// Root certificates for calls to https hosts outside the cluster
	// (webhooks, notifications, Prometheus), where the system has none.
	roots.Install()
	memory.SetGCPercent()
	// A sweep's heap stays under its container's memory limit (the GC
	// works harder near it) rather than the kernel killing the sweep.
	memory.SetMemoryLimit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.ExecuteAs(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
