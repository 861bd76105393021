// Package traffic tests IDLE conditions that read traffic: nsman sweep on
// a real control plane, asking a real Prometheus that scrapes an exporter
// of the counters ingress-nginx, Istio and Traefik serve, named and
// labelled as those projects do.
package traffic

import (
	"context"
	"testing"
	"time"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

var (
	shared *cluster.Cluster
	env    *nsmantest.Env
)

func TestMain(m *testing.M) {
	nsmantest.RunInOwnNamespace()
	cluster.Main(m, cluster.APITier, &shared)
}

// setup prepares the shared control plane for nsman once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	if env != nil {
		return env
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := nsmantest.Setup(ctx, shared, nsmantest.CRD(t))
	if err != nil {
		t.Fatalf("prepare control plane for nsman: %v", err)
	}
	env = e
	return env
}
