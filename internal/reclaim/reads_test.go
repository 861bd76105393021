package reclaim

import (
	"log/slog"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
)

// The sweep's defaults (sweep.DefaultPageSize, DefaultClaimTTL and
// MinClaimTTL), which reclaim's tests read with.
const (
	defaultPageSize = 500
	defaultClaimTTL = time.Minute
	minClaimTTL     = 10 * time.Second
)

// testReads reads with clients, the default page size and claimTTL, logging
// to log (nowhere, when nil).
func testReads(clients cluster.Clients, claimTTL time.Duration, log *slog.Logger) probe.Reads {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return probe.Reads{Reader: cluster.Reader{Clients: clients, PageSize: defaultPageSize, Log: log}, ClaimTTL: claimTTL}
}
