// Command nsman manages the lifecycle of Kubernetes namespaces from
// NamespaceManager resources.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nsman/nsman/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
