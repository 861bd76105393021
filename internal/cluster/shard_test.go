package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"
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

// Every manager has exactly one shard, and random UIDs spread evenly. The
// UIDs come from a seeded generator, so the test gives the same answer every
// run: it fails on a skewed hash, never on bad luck.
func TestShardOfCoversAndBalances(t *testing.T) {
	const managers = 40000
	random := rand.New(rand.NewPCG(6, 10000))
	uids := make([]types.UID, managers)
	for i := range uids {
		var b [16]byte
		for j := range b {
			b[j] = byte(random.Uint32())
		}
		b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // version 4, RFC 4122 variant, as the API server's
		uids[i] = types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
	}
	for _, count := range []int{2, 3, 4, 16} {
		per := make([]int, count)
		for _, uid := range uids {
			s := ShardOf(uid, count)
			if s < 0 || s >= count {
				t.Fatalf("shard %d of %d", s, count)
			}
			per[s]++
		}
		even := managers / count
		for i, n := range per {
			// Within 5% of the even share.
			if n < even*95/100 || n > even*105/100 {
				t.Errorf("%d shards: shard %d has %d managers, want about %d (%v)", count, i, n, even, per)
			}
		}
	}
}
