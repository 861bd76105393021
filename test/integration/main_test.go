// Package integration tests nsman sweep on a real control plane with
// nsman's CRD (deploy/base/crd.yaml), running as nsman's ServiceAccount under the
// RBAC of deploy/base/rbac.yaml.
package integration

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
	cluster.Main(m, cluster.FullTier, &shared)
}

// setup prepares the shared control plane for nsman once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	if env != nil {
		return env
	}
	crd := nsmantest.CRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := nsmantest.Setup(ctx, shared, crd)
	if err != nil {
		t.Fatalf("prepare control plane for nsman: %v", err)
	}
	env = e
	return env
}
