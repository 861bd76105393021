// Package robust proves that nsman never does an action twice, never does
// one it must not and never loses one, whatever runs beside it: here, several
// sweeps at once over the same managers, on a real API server.
package robust

import (
	"testing"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

var shared *cluster.Cluster

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.APITier, &shared)
}

func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	crd := nsmantest.CRD(t)
	env, err := nsmantest.Setup(t.Context(), shared, crd)
	if err != nil {
		t.Fatal(err)
	}
	return env
}
