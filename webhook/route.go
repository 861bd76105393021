package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Route says who chose a receiver and how it may be reached. The zero
// Route is a receiver chosen by the platform team (a trusted manager, a
// rule, --notify-url): the deny list and the allow list apply.
type Route struct {
	// Tenant: the receiver was chosen in a tenant's namespace. It may reach
	// public addresses only, unless the allow list admits it; when the allow
	// list names anything, only what it admits, as for everyone.
	Tenant bool
	// Scope is where the receiver was chosen (a tenant's namespace, or ""
	// for the platform): a receiver that timed out defers later deliveries
	// to it of every tenant when a tenant's, of the platform when the
	// platform's, never one of the other; a tenant's scope whose receivers
	// timed out twice defers all its later deliveries; and tenants'
	// deliveries that ended silent spend the tenants' time of the sweep
	// (see silence).
	Scope string
	// Endpoints, when set, are dialled instead of what the URL's host
	// resolves to, in turn until one connects: the ready endpoints of the
	// Pods a Service of the tenant's own namespace selects, read through
	// the API (its addresses and ports, the URL's port aside). The deny
	// list applies to them; the allow list does not, since the tenant's
	// Pods are the tenant's. No connection to them is pooled: each attempt
	// dials endpoints checked just before it.
	Endpoints []netip.AddrPort
	// Recheck, when set, runs before every attempt but the first and
	// returns the Endpoints to dial now, read again: an error ends the
	// delivery, as when what they were chosen from changed meanwhile, and
	// Summary says it in the error's own words (which must be fit for a
	// tenant).
	Recheck func(context.Context) ([]netip.AddrPort, error)
}

type routeKey struct{}

// routeOf is the Route of a request's context.
func routeOf(ctx context.Context) Route {
	r, _ := ctx.Value(routeKey{}).(Route)
	return r
}

// nonPublic are the ranges a tenant's webhook may not reach by address
// (IANA's special-purpose registries, those not globally reachable), with
// what each is: in-cluster Services, nodes and whatever a platform runs
// behind them live there.
var nonPublic = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared address (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("5f00::/16"), "a segment routing address"},
	{netip.MustParsePrefix("fc00::/7"), "a unique local address (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// checkPublic refuses an address a tenant's webhook may not reach: one
// not globally reachable. An IPv4-mapped or NAT64 (64:ff9b::/96) address is
// judged as the IPv4 address it holds.
func checkPublic(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if b := ip.As16(); ip.Is6() && [12]byte(b[:12]) == [12]byte{0x00, 0x64, 0xff, 0x9b} {
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return errors.New(r.what)
		}
	}
	return nil
}

// tenantCheck returns the check the dialer runs on each address a tenant's
// receiver host resolved to: the deny list, then what the allow list
// admits when it names anything, else public addresses only.
func (a *AllowList) tenantCheck(host string, deny func(netip.Addr) error) func(netip.Addr) error {
	if a.restricts() {
		return a.addressCheck(host, deny)
	}
	return func(ip netip.Addr) error {
		if err := deny(ip); err != nil {
			return err
		}
		if err := checkPublic(ip); err != nil {
			return fmt.Errorf("%w; a tenant's webhook may reach public addresses and Services of its own namespace (--webhook-allow admits others)", err)
		}
		return nil
	}
}

// Summary says what became of a Send in words a tenant may read: "refused:
// <reason>" when the address policy or the URL stopped it, "deferred: ..."
// when its receiver, or receivers of its tenant's namespace, timed out
// earlier in the sweep, or tenants' silent receivers took the sweep's time
// for them (see silence), "failed: HTTP
// <code>" when the receiver answered, "timed out", or "failed: no
// connection" for every other network failure, whose text (connection
// refused, reset, a certificate) would tell a tenant what listens where.
func Summary(d Delivery, err error) string {
	if err == nil {
		return "delivered: HTTP " + fmt.Sprint(d.StatusCode)
	}
	after := ""
	if d.Attempts > 1 {
		after = " " + d.after()
	}
	if Deferred(err) {
		return deferralText(err)
	}
	if rc, ok := errors.AsType[*recheckError](err); ok {
		return rc.err.Error()
	}
	if refused, ok := errors.AsType[*refusedError](err); ok {
		return "refused: " + refused.err.Error()
	}
	if notAllowed, ok := errors.AsType[*notAllowedError](err); ok {
		return "refused: " + notAllowed.Error()
	}
	if invalid, ok := errors.AsType[*invalidURLError](err); ok {
		return "refused: " + invalid.Error()
	}
	switch {
	case d.StatusCode != 0:
		return fmt.Sprintf("failed: HTTP %d%s", d.StatusCode, after)
	case timedOut(err):
		return "timed out" + after
	case errors.Is(err, context.Canceled):
		return "interrupted" + after
	}
	return "failed: no connection" + after
}

// errNoEndpoint ends a delivery to a tenant's Pods that has none to dial.
var errNoEndpoint = errors.New("refused: no endpoint of the Service to dial")

// recheckError is a delivery that Route.Recheck ended.
type recheckError struct{ err error }

func (e *recheckError) Error() string { return e.err.Error() }

func (e *recheckError) Unwrap() error { return e.err }

// timedOut reports an attempt that got no answer in time: the attempt's
// deadline, or a time-out of the transport (a TLS handshake).
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}
