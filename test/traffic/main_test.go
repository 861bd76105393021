// Package traffic tests IDLE conditions that read traffic: nsman sweep on
// a real control plane, asking a real Prometheus that scrapes an exporter
// of the counters ingress-nginx, Istio and Traefik serve, named and
// labelled as those projects do.
package traffic

import (
	"testing"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

var (
	shared   *cluster.Cluster
	prepared nsmantest.Prepared
	// env is prepared's Env, once a test has asked for it.
	env *nsmantest.Env
)

func TestMain(m *testing.M) {
	nsmantest.RunInOwnNamespace()
	cluster.Main(m, cluster.APITier, &shared)
}

// setup prepares the shared control plane for nsman once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	env = prepared.Env(t, shared)
	return env
}
