package probe

import (
	"log/slog"
	"time"

	"github.com/nsman/nsman/internal/cluster"
)

// The sweep's defaults (sweep.DefaultPageSize, DefaultClaimTTL, MinClaimTTL
// and DefaultStuckAfter), which probe's tests read with.
const (
	defaultPageSize   = 500
	defaultClaimTTL   = time.Minute
	minClaimTTL       = 10 * time.Second
	defaultStuckAfter = 10 * time.Minute
)

// testReads reads with clients, the default page size and claimTTL, logging
// to log (nowhere, when nil).
func testReads(clients cluster.Clients, claimTTL time.Duration, log *slog.Logger) Reads {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return Reads{Reader: cluster.Reader{Clients: clients, PageSize: defaultPageSize, Log: log}, ClaimTTL: claimTTL}
}
