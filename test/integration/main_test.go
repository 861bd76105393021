// Package integration tests nsman sweep on a real control plane with
// nsman's CRD (deploy/base/crd.yaml), running as nsman's ServiceAccount under the
// RBAC of deploy/base/rbac.yaml.
package integration

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
	cluster.Main(m, cluster.FullTier, &shared)
}

// setup prepares the shared control plane for nsman once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	env = prepared.Env(t, shared)
	return env
}
