// Command traffic-exporter is the ingress controller and the Prometheus of
// make demo's traffic scene: it serves ingress-nginx's request counter on
// loopback, as the controller exports it, starts the Prometheus that make
// control-plane built, scraping it as a ServiceMonitor scrapes the
// controller (its target in namespace ingress-nginx), and prints that
// Prometheus's URL first. It counts a request to -namespace every 300ms
// for -for, then none; each SIGUSR1 counts one more. SIGTERM or SIGINT
// stop it and its Prometheus.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nsman/nsman/test/nsmantest"
)

func main() {
	namespace := flag.String("namespace", "", "the namespace the requests go to")
	during := flag.Duration("for", 20*time.Second, "how long requests come, one every 300ms")
	dir := flag.String("dir", "", "where Prometheus keeps its configuration and storage (default: a temporary directory)")
	flag.Parse()
	if *namespace == "" {
		log.Fatal("traffic-exporter: -namespace is required")
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "traffic-exporter-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	tr, handler := nsmantest.NewTraffic()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	prom, err := nsmantest.LaunchPrometheus(ctx, *dir, nsmantest.ScrapeJob{Name: "ingress-nginx", Targets: []string{l.Addr().String()},
		Labels: map[string]string{"namespace": "ingress-nginx"}})
	if err != nil {
		log.Fatal(err)
	}
	defer prom.Stop()
	fmt.Println(prom.URL)

	one := make(chan os.Signal, 1)
	signal.Notify(one, syscall.SIGUSR1)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	end := time.After(*during)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			tr.Requests(*namespace, 1)
		case <-end:
			tick.Stop()
			fmt.Println("requests stopped")
		case <-one:
			tr.Requests(*namespace, 1)
			fmt.Println("one request")
		}
	}
}
