package record

import (
	"context"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// Record is where a subject's Progress is kept: a Manager or a Pair, made
// from what the sweep listed. The executor writes through it alone. A
// write that follows no claim of this sweep's is conditional on the version
// listed (write.ErrChanged when the subject is not as listed any more: it
// is left to the next sweep), or, for the outcome of a rule's DELETE, on
// the record listed.
type Record interface {
	// Prior is what the record said as listed.
	Prior() status.Prior
	// Claim writes claim c with acting, the entry that says so, dropping
	// minChecks progress when final.
	Claim(ctx context.Context, c status.Claim, acting report.Entry, final bool) error
	// Write writes what the record keeps of o, if that changed. After a
	// claim, o replaces it, if it is still this sweep's.
	Write(ctx context.Context, o Outcome) error
	// Unchanged reports whether a namespace, read again as now, is as
	// listed for what the decision rests on.
	Unchanged(listed, now cluster.Namespace) bool
	Sink() Sink
}

// Outcome is what a record keeps of one entry of a sweep.
type Outcome struct {
	Entry report.Entry
	// Checks is the minChecks progress of a waiting entry, and the owner
	// its OWNER_GONE policies remember (see policy.CheckState).
	Checks map[string]policy.CheckState
	// Last is the outcome of an action; stage names its policy when not
	// final; done: a final policy's action succeeded.
	Last  *status.LastAction
	Stage string
	Done  bool
	// Asleep, set, replaces the record's SLEEP state: the target was put
	// to sleep (or part of it); Woke clears it.
	Asleep *status.Asleep
	Woke   bool
	// StuckOnly: only what e says of a stuck target is kept; StuckUnread:
	// the record's is kept as it was (see decision).
	StuckOnly, StuckUnread bool
	// Warned, set, replaces the warnings the record keeps as told: a
	// waiting entry's, written before the warning is told.
	Warned *status.Warned
}

// sleep is the SLEEP state a record keeps after o, was being the one
// before.
func (o Outcome) sleep(was *status.Asleep) *status.Asleep {
	switch {
	case o.Woke:
		return nil
	case o.Asleep != nil:
		return o.Asleep
	}
	return was
}

// Env is what a record needs of the sweep: the writer, a reader to
// read its subject again, the clock and --claim-ttl, to tell a live claim.
type Env struct {
	Writer   write.Writer
	Reads    cluster.Reader
	Clock    func() time.Time
	ClaimTTL time.Duration
}

// Sink hears what became of each subject a sweep handled, and tells it in
// Events on the manager: package tell's ManagerEvents at once for a
// manager, its RuleTally in at most four Events per sweep for a rule's
// namespaces. Events are written synchronously, to be there when the
// process exits; a failure to write one is logged, never fatal.
type Sink interface {
	// Tell hears e, the entry a subject ends the sweep with; acted: an
	// action was attempted; recorded: what e says was recorded (or needed
	// no record).
	Tell(ctx context.Context, e report.Entry, before status.Prior, acted, recorded bool)
}
