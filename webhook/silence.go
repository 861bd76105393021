package webhook

import (
	"errors"
	"fmt"
	"sync"
)

// maxSilentPerScope is how many receivers of one tenant's scope may time
// out in a sweep before every later Send of that scope is deferred: a
// tenant whose managers name many receivers that never answer (a port or
// a Service each) would otherwise cost the sweep a timeout per receiver.
const maxSilentPerScope = 2

// ErrDeferred is a Send not attempted: an attempt to the same receiver, in
// the same scope (see Route.Scope), timed out before through this Sender,
// or a delivery to it failed after an attempt's timeout or longer.
var ErrDeferred = errors.New("deferred: the receiver did not answer an earlier request of this sweep in time")

// errScopeSilent is a Send not attempted because maxSilentPerScope
// receivers of its tenant's scope timed out before; it is ErrDeferred.
var errScopeSilent error = deferral(fmt.Sprintf("deferred: %d receivers of this namespace did not answer a request of this sweep in time", maxSilentPerScope))

// deferral is a deferred Send with words of its own.
type deferral string

func (d deferral) Error() string { return string(d) }

func (d deferral) Is(target error) bool { return target == ErrDeferred }

// Deferred reports whether err is a Send deferred because its receiver, or
// receivers of its tenant's scope, timed out on earlier requests through
// the same Sender.
func Deferred(err error) bool { return errors.Is(err, ErrDeferred) }

// deferralText is what a deferred Send says, without the receiver's name.
func deferralText(err error) string {
	if errors.Is(err, errScopeSilent) {
		return errScopeSilent.Error()
	}
	return ErrDeferred.Error()
}

// silence is what timed out in a sweep: receivers by scope (see
// Route.Scope), and how many of each tenant's scope. A Sender's copies
// share it.
type silence struct {
	mu sync.Mutex
	// receivers holds scope + " " + receiver: a receiver silent for one
	// tenant defers no other tenant's Sends to it, nor the platform's, nor
	// the platform's a tenant's. A receiver on a host many tenants share
	// (a public hook service) may be silent for one tenant's path or
	// account alone; one tenant's silence would otherwise defer, and back
	// off, every other tenant's webhooks to it. What one tenant's silent
	// receivers cost a sweep is bounded by maxSilentPerScope instead.
	receivers map[string]bool
	scopes    map[string]int
}

func newSilence() *silence {
	return &silence{receivers: map[string]bool{}, scopes: map[string]int{}}
}

// mark records that an attempt to receiver, in scope, timed out, or that a
// delivery to it failed after an attempt's timeout or longer.
func (z *silence) mark(scope, receiver string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if key := scope + " " + receiver; !z.receivers[key] {
		z.receivers[key] = true
		if scope != "" {
			z.scopes[scope]++
		}
	}
}

// deferral is why a Send to receiver, in scope, is deferred now, or nil.
func (z *silence) deferral(scope, receiver string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	switch {
	case z.receivers[scope+" "+receiver]:
		return ErrDeferred
	case z.spent(scope):
		return errScopeSilent
	}
	return nil
}

// exhausted reports whether a tenant's scope has spent its silent
// receivers: a Send under way retries no more.
func (z *silence) exhausted(scope string) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.spent(scope)
}

func (z *silence) spent(scope string) bool {
	return scope != "" && z.scopes[scope] >= maxSilentPerScope
}
