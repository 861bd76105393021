package cluster

import (
	"os"
	"testing"
)

// shared is the full-tier control plane the tests of this package run on.
var shared *Cluster

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(leakChild(mode))
	}
	Main(m, FullTier, &shared)
}
