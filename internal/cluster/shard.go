package cluster

import (
	"hash/fnv"

	"k8s.io/apimachinery/pkg/types"
)

// ShardOf is the shard, of count, that handles the manager with uid: FNV-1a
// of the UID, modulo count. A UID never changes, so neither does a
// manager's shard while count stays the same; and UIDs are random, so
// shards get about as many managers each.
func ShardOf(uid types.UID, count int) int {
	if count <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return int(h.Sum64() % uint64(count))
}
