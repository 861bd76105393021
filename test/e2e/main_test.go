package e2e

import (
	"testing"

	"github.com/nsman/nsman/test/cluster"
)

// shared is an API-tier control plane: the commands' wiring (kubeconfig,
// exit codes, output) needs no nodes.
var shared *cluster.Cluster

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.APITier, &shared)
}
