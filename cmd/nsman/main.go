// Command nsman manages the lifecycle of Kubernetes namespaces from
// NamespaceManager resources.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// Root certificates for WEBHOOK calls to https hosts outside the
	// cluster, used only where the system has none. nsman's image must not
	// depend on its base carrying a CA bundle (scratch has none; distroless
	// static has one today), and a sweep that cannot verify a webhook server
	// fails every time. Where /etc/ssl/certs has roots, those are used and
	// these are ignored.
	_ "golang.org/x/crypto/x509roots/fallback"

	// The IANA time-zone database, for policies' windows
	// (spec.policies[].windows[].timeZone), used only where the system has
	// none: distroless static carries no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/nsman/nsman/cmd"
)

func main() {
	setGCPercent()
	// A sweep's heap stays under its container's memory limit (the GC
	// works harder near it) rather than the kernel killing the sweep.
	setMemoryLimit(cgroupRoot)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.ExecuteAs(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
