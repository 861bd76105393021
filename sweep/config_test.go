package sweep

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/policy"
)

// Whatever ProtectedNamespaces a caller sets, the floor stays protected.
func TestNewKeepsTheProtectedFloor(t *testing.T) {
	for _, tt := range []struct {
		name      string
		protected []string
	}{
		{name: "none", protected: nil},
		{name: "others only", protected: []string{"prod"}},
		{name: "part of the floor", protected: []string{"kube-system", "prod"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			given := slices.Clone(tt.protected)
			s, err := New(Config{ProtectedNamespaces: given, TrustedNamespaces: []string{"ops"}}, cluster.Clients{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range append(ProtectedFloor(), tt.protected...) {
				m := policy.Manager{Namespace: "ops", Name: "expiry", TargetNamespace: ns}
				if why := (&decide.Evaluator{Trusted: s.cfg.TrustedNamespaces, Protected: s.cfg.ProtectedNamespaces}).Refuse(m); why != "namespace "+ns+" is protected" {
					t.Errorf("target %s: refusal %q, want it protected", ns, why)
				}
			}
			if why := (&decide.Evaluator{Trusted: s.cfg.TrustedNamespaces, Protected: s.cfg.ProtectedNamespaces}).Refuse(policy.Manager{Namespace: "ops", Name: "expiry", TargetNamespace: "team"}); why != "" {
				t.Errorf("target team refused: %q", why)
			}
			if !slices.Equal(given, tt.protected) {
				t.Errorf("New changed the caller's list to %v", given)
			}
		})
	}
}

// ProtectedFloor returns a copy: no caller can shrink the floor.
func TestProtectedFloorIsACopy(t *testing.T) {
	floor := ProtectedFloor()
	floor[0] = "changed"
	if got := ProtectedFloor(); !slices.Equal(got, []string{"kube-system", "kube-public", "kube-node-lease"}) {
		t.Errorf("ProtectedFloor() = %v after a caller changed its copy", got)
	}
}

func TestConfigRejectsBadShards(t *testing.T) {
	for _, tt := range []struct{ index, count int }{{1, 1}, {0, -1}, {-1, 2}, {2, 2}, {1, 0}} {
		t.Run(fmt.Sprintf("%d of %d", tt.index, tt.count), func(t *testing.T) {
			if err := (Config{ShardIndex: tt.index, ShardCount: tt.count}).Validate(); err == nil {
				t.Error("accepted")
			}
		})
	}
	for _, tt := range []struct{ index, count int }{{0, 0}, {0, 1}, {3, 4}} {
		if err := (Config{ShardIndex: tt.index, ShardCount: tt.count}).Validate(); err != nil {
			t.Errorf("shard %d of %d: %v", tt.index, tt.count, err)
		}
	}
}
