// Package robust proves that nsman never does an action twice, never does
// one it must not and never loses one, whatever runs beside it: several
// sweeps at once over the same managers, sweeps killed at any request, an
// API server connection that fails, hostile webhook receivers, a skewed
// clock; all on a real API server.
//
// The tests run in seconds by default. The long variants (more managers,
// sweeps, kill points and fault rounds; a few minutes on two cores) run
// with NSMAN_LONG=1, here and in the compatibility tests:
//
//	NSMAN_LONG=1 go test -count=1 -timeout 60m -v ./test/robust/ ./test/compat/
//
// (make test-long runs that and shows only the results).
//
// Each of the scaled tests ends with one line
// "figures: runs=… faults=… actions=… duplicates=… took=…": sweeps run,
// faults injected, destructive actions observed, and duplicates among them,
// which fail the test.
package robust

import (
	"testing"

	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

var shared *cluster.Cluster

func TestMain(m *testing.M) {
	nsmantest.ServeLaunch() // before the control plane: a launcher starts none
	nsmantest.RunInOwnNamespace()
	cluster.Main(m, cluster.APITier, &shared)
}

func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	crd := nsmantest.CRD(t)
	env, err := nsmantest.Setup(t.Context(), shared, crd)
	if err != nil {
		t.Fatal(err)
	}
	nsmantest.InstallFixtureCRDs(t, env.Dynamic) // the KEDA and Argo Rollouts kinds a SLEEP puts to sleep
	return env
}
