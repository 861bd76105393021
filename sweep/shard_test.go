package sweep

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// A manager's shard depends on its UID alone: the same UID lands in the
// same shard in every sweep and every nsman version. The pinned values
// guard that; changing the hash would move managers between shards while
// sweeps of two versions run side by side. (The values are FNV-1a 64 of the
// UID's text, computed apart from this code.)
func TestShardOfIsStable(t *testing.T) {
	for _, tt := range []struct {
		uid   types.UID
		count int
		want  int
	}{
		{"6f1c2a9e-3b7d-4c55-9a43-2d8e0b1f7c10", 1, 0},
		{"6f1c2a9e-3b7d-4c55-9a43-2d8e0b1f7c10", 0, 0},
		{"6f1c2a9e-3b7d-4c55-9a43-2d8e0b1f7c10", 4, 1},
		{"0d3f4b7a-8e21-4f6c-b5a9-71c2e4d90a3b", 4, 1},
		{"0d3f4b7a-8e21-4f6c-b5a9-71c2e4d90a3b", 7, 4},
	} {
		for range 3 {
			if got := ShardOf(tt.uid, tt.count); got != tt.want {
				t.Errorf("ShardOf(%s, %d) = %d, want %d", tt.uid, tt.count, got, tt.want)
			}
		}
	}
}

// Every manager has exactly one shard, and random UIDs spread evenly.
func TestShardOfCoversAndBalances(t *testing.T) {
	const managers = 40000
	for _, count := range []int{2, 3, 4, 16} {
		per := make([]int, count)
		for range managers {
			s := ShardOf(uuid.NewUUID(), count)
			if s < 0 || s >= count {
				t.Fatalf("shard %d of %d", s, count)
			}
			per[s]++
		}
		even := managers / count
		for i, n := range per {
			// 5% off the even share is over 5 standard deviations for these
			// counts: a failure is a skewed hash, not bad luck.
			if n < even*95/100 || n > even*105/100 {
				t.Errorf("%d shards: shard %d has %d managers, want about %d (%v)", count, i, n, even, per)
			}
		}
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
