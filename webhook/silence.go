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

// ErrDeferred is a Send not attempted: an attempt to the same receiver, of
// the same trust (see Route.Scope), timed out before through this Sender,
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

// silence is what timed out in a sweep: receivers by trust, the
// platform's apart from the tenants' (see Route.Scope), and how many of
// each tenant's scope. A Sender's copies share it.
type silence struct {
	mu sync.Mutex
	// receivers holds trust(scope) + " " + receiver.
	receivers map[string]bool
	// byScope holds a tenant's scope + " " + receiver, which scopes counts.
	byScope map[string]bool
	scopes  map[string]int
}

func newSilence() *silence {
	return &silence{receivers: map[string]bool{}, byScope: map[string]bool{}, scopes: map[string]int{}}
}

// trust is who a scope's deliveries share silent receivers with: every
// tenant with every other (a receiver that did not answer one tenant in
// time is deferred for all, or tenants naming it from many namespaces would
// cost a timeout each), and the platform with none, so that no tenant's
// request defers a notification or a trusted manager's webhook.
func trust(scope string) string {
	if scope == "" {
		return "platform"
	}
	return "tenants"
}

// mark records that an attempt to receiver, in scope, timed out, or that a
// delivery to it failed after an attempt's timeout or longer.
func (z *silence) mark(scope, receiver string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.receivers[trust(scope)+" "+receiver] = true
	if key := scope + " " + receiver; scope != "" && !z.byScope[key] {
		z.byScope[key] = true
		z.scopes[scope]++
	}
}

// deferral is why a Send to receiver, in scope, is deferred now, or nil.
func (z *silence) deferral(scope, receiver string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	switch {
	case z.receivers[trust(scope)+" "+receiver]:
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
