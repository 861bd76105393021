package webhook

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// maxSilentPerScope is how many receivers of one tenant's scope may time
// out in a sweep before every later Send of that scope is deferred: a
// tenant whose managers name many receivers that never answer (a port or
// a Service each) would otherwise cost the sweep a timeout per receiver.
const maxSilentPerScope = 2

// ErrDeferred is a Send not attempted: an attempt to the same receiver
// timed out before through this Sender (for any tenant, or for the
// platform), or a delivery to it failed after an attempt's timeout or
// longer.
var ErrDeferred = errors.New("deferred: the receiver did not answer an earlier request of this sweep in time")

// errScopeSilent is a Send not attempted because maxSilentPerScope
// receivers of its tenant's scope timed out before; it is ErrDeferred.
var errScopeSilent error = deferral(fmt.Sprintf("deferred: %d receivers of this namespace did not answer a request of this sweep in time", maxSilentPerScope))

// errBudgetSpent is a tenant's Send not attempted because tenants'
// receivers that did not answer took the time this sweep gives them (see
// silence.budget); it is ErrDeferred.
var errBudgetSpent error = deferral("deferred: receivers that did not answer in time took what this sweep waits for tenants' webhooks (2 × --webhook-timeout × --concurrency); a later sweep tries again")

// deferral is a deferred Send with words of its own.
type deferral string

func (d deferral) Error() string { return string(d) }

func (d deferral) Is(target error) bool { return target == ErrDeferred }

// Deferred reports whether err is a Send deferred because its receiver, or
// receivers of its tenant's scope, timed out on earlier requests through
// the same Sender, or because tenants' silent receivers took the sweep's
// time for them.
func Deferred(err error) bool { return errors.Is(err, ErrDeferred) }

// deferralText is what a deferred Send says, without the receiver's name.
func deferralText(err error) string {
	for _, d := range []error{errScopeSilent, errBudgetSpent} {
		if errors.Is(err, d) {
			return d.Error()
		}
	}
	return ErrDeferred.Error()
}

// silence is what timed out in a sweep: receivers, by whose they are (the
// tenants', or the platform's), how many of each tenant's scope, and the
// time tenants' deliveries spent on them. A Sender's copies share it.
type silence struct {
	mu sync.Mutex
	// receivers holds the tenants' receivers that did not answer in time
	// ("tenant " + receiver), and the platform's ("platform " + receiver):
	// a receiver silent for one tenant is silent for every tenant, so that
	// many namespaces naming one host that never answers cost a sweep the
	// attempts under way when it first timed out, not one each; but it
	// defers none of the platform's deliveries (a notification, a rule's
	// webhook), nor the platform's silence a tenant's.
	receivers map[string]bool
	// scoped holds scope + " " + receiver for each tenant's receiver that
	// timed out for that scope, and scopes counts them by scope.
	scoped map[string]bool
	scopes map[string]int
	// spent is the time tenants' deliveries that ended silent took (see
	// end), and budget how much of it tenants' deliveries may take before
	// the next is deferred (0: no bound).
	//
	// Bound: a tenant's delivery makes an attempt only while spent <
	// budget, and an attempt that times out ends it, so receivers that
	// never answer hold the workers (W, which make at most W deliveries at
	// once) for less than budget + W × timeout in all: with budget =
	// 2 × timeout × W, less than 3 × timeout × W, about 3 timeouts of wall
	// time when the workers wait side by side. (A delivery slow to fail,
	// answered every time, adds its own worst case instead of one timeout:
	// MaxAttempts attempts and the pauses between them.)
	spent, budget time.Duration
}

func newSilence(budget time.Duration) *silence {
	return &silence{receivers: map[string]bool{}, scoped: map[string]bool{}, scopes: map[string]int{}, budget: budget}
}

// whose is the key of receiver in receivers for scope.
func whose(scope, receiver string) string {
	if scope == "" {
		return "platform " + receiver
	}
	return "tenant " + receiver
}

// mark records that an attempt to receiver, in scope, timed out, or that a
// delivery to it failed after an attempt's timeout or longer.
func (z *silence) mark(scope, receiver string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.receivers[whose(scope, receiver)] = true
	if key := scope + " " + receiver; scope != "" && !z.scoped[key] {
		z.scoped[key] = true
		z.scopes[scope]++
	}
}

// end records a delivery in scope that ended silent after took: an attempt
// of it timed out, or it failed after an attempt's timeout or longer.
func (z *silence) end(scope, receiver string, took time.Duration) {
	z.mark(scope, receiver)
	if scope == "" {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.spent += took
}

// deferral is why a Send to receiver, in scope, is deferred now, or nil.
func (z *silence) deferral(scope, receiver string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	switch {
	case z.receivers[whose(scope, receiver)]:
		return ErrDeferred
	case z.scopeSpent(scope):
		return errScopeSilent
	case z.budgetSpent(scope):
		return errBudgetSpent
	}
	return nil
}

// stops reports whether a tenant's delivery to receiver, in scope, under
// way, makes no further attempt: one would be deferred now (the receiver
// timed out, for it or another delivery; its scope spent its silent
// receivers; the tenants' time is spent). The platform's go on: its
// receivers are its own choice, and a notification not delivered is not
// sent again.
func (z *silence) stops(scope, receiver string) bool {
	return scope != "" && z.deferral(scope, receiver) != nil
}

func (z *silence) scopeSpent(scope string) bool {
	return scope != "" && z.scopes[scope] >= maxSilentPerScope
}

func (z *silence) budgetSpent(scope string) bool {
	return scope != "" && z.budget > 0 && z.spent >= z.budget
}
