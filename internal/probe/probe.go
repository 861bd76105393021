// Package probe is what a sweep reads of namespaces to decide on them, each
// read bounded in objects, bytes and time: the pods checks of
// PODS_SUCCEED and PODS_FAILED (pods, then Jobs), the last activity of
// IDLE, and why a namespace is stuck in Terminating (what a DELETE
// reclaims is internal/reclaim's). Each is read namespace by namespace
// first, then, past a number of namespaces in one sweep, from one
// cluster-wide paged list, listed once by the probe that owns it; a sweep
// makes one of each.
package probe

import (
	"time"

	"github.com/nsman/nsman/internal/cluster"
)

// Reads is how every probe of a sweep reads: the cluster's clients, the
// page size and the logger, and the time the sweep gives a read.
type Reads struct {
	cluster.Reader
	// ClaimTTL bounds a sweep's cluster-wide index: a cluster of very many
	// objects holds up what waits on it that long at most.
	ClaimTTL time.Duration
}

// NamespaceTimeout bounds the lists a sweep reads of one namespace before
// it acts, of objects a tenant may make many of (what it frees, its last
// activity, its Jobs, a webhook's Service): a quarter of claimTTL, at most
// 10s.
func NamespaceTimeout(claimTTL time.Duration) time.Duration {
	return min(claimTTL/4, 10*time.Second)
}

// NamespaceTimeout is r's: see the function of that name.
func (r Reads) NamespaceTimeout() time.Duration { return NamespaceTimeout(r.ClaimTTL) }
