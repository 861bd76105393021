package webhook

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allowAll is an address policy that refuses nothing, to see the allow
// list's judgement alone.
func allowAll(netip.Addr) error { return nil }

// FuzzAddressPolicy checks the address policy on any allow list (the
// entries of --webhook-allow, comma-separated), receiver host and address:
//   - ParseAllowList accepts a list exactly when it accepts each entry,
//     and names every entry it rejects; an accepted entry allows what it
//     names;
//   - the deny list judges an address the same in every spelling the
//     dialer may meet (IPv4-mapped, behind the NAT64 prefix, with a zone),
//     and the dial-time check refuses what the deny list refuses;
//   - for a receiver given by IP address, the check before any network I/O
//     and the one at dial time agree, and an IP address is never allowed
//     by name;
//   - a host allowed by name may be dialled at any address the deny list
//     allows.
func FuzzAddressPolicy(f *testing.F) {
	for _, seed := range []struct {
		entries, host string
		addr          []byte
		zone          string
	}{
		{"hook.example.com,*.svc.cluster.local,10.20.0.0/16,fd00::/8", "hook.example.com", []byte{10, 20, 1, 2}, ""},
		{"Hook.Example.COM.,192.168.1.7", "192.168.1.7", []byte{169, 254, 169, 254}, ""},
		{"*.example.com", "example.com", []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "eth0"},
		{"::ffff:10.0.0.0/104,10.0.0.1/8,*,https://h/,a*.b,fe80::1%eth0", "::ffff:10.0.0.1", []byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 169, 254, 169, 254}, ""},
		{"2001:db8::/32, my_hook.internal ,1.2.3.4", "2001:db8::1", []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "x"},
		{"", "localhost", []byte{127, 0, 0, 1}, ""},
		{"100.100.100.200/32", "100.100.100.200", []byte{0, 0, 0, 0}, ""},
	} {
		f.Add(seed.entries, seed.host, seed.addr, uint16(443), seed.zone)
	}
	f.Fuzz(func(t *testing.T, entries, host string, addr []byte, port uint16, zone string) {
		list := strings.Split(entries, ",")
		a, err := ParseAllowList(list)
		checkParsedAllowList(t, list, a, err)
		ip, ok := netip.AddrFromSlice(addr)
		if !ok {
			return
		}
		// A zone as an interface name: letters and digits.
		zone = strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				return r
			}
			return -1
		}, zone)
		if zone == "" {
			zone = "eth0"
		}
		checkDenySpellings(t, ip, port, zone)
		if a == nil {
			return
		}
		for _, dialled := range []netip.Addr{ip, ip.Unmap(), netip.AddrFrom16(ip.As16()), ip.WithZone(zone)} {
			literal := dialled.String()
			before := a.check(literal)
			atDial := dialControl(a.addressCheck(literal, allowAll))("tcp", netip.AddrPortFrom(dialled, port).String(), nil)
			if (before == nil) != (atDial == nil) {
				t.Fatalf("receiver %s under %q: before I/O %v, at dial time %v", literal, entries, before, atDial)
			}
			if a.allowsName(literal) {
				t.Fatalf("IP address %s allowed by name under %q", literal, entries)
			}
		}
		if a.check(host) == nil && a.allowsName(host) {
			deny := checkDenyList(ip)
			if got := a.addressCheck(host, checkDenyList)(ip); (got == nil) != (deny == nil) {
				t.Fatalf("host %s allowed by name under %q, at address %s: %v; the deny list: %v", host, entries, ip, got, deny)
			}
		}
	})
}

// checkParsedAllowList checks ParseAllowList's answer err on list: it
// accepts a list exactly when it accepts each entry alone, names each one
// it rejects, and each accepted entry allows what it names.
func checkParsedAllowList(t *testing.T, list []string, a *AllowList, err error) {
	t.Helper()
	rejected := 0
	for _, entry := range list {
		one, oneErr := ParseAllowList([]string{entry})
		if oneErr != nil {
			rejected++
			if err == nil || !strings.Contains(err.Error(), strconv.Quote(entry)) {
				t.Fatalf("entry %q rejected alone (%v), but the list of it: %v", entry, oneErr, err)
			}
			continue
		}
		if !one.restricts() {
			t.Fatalf("entry %q accepted, but allows anything", entry)
		}
		name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(entry)), ".")
		switch p, perr := netip.ParsePrefix(name); {
		case perr == nil:
			if !one.allowsAddress(p.Addr()) {
				t.Fatalf("CIDR %q does not allow %s", entry, p.Addr())
			}
		case strings.HasPrefix(name, "*."):
			if below := "a" + name[1:]; !one.allowsName(below) || one.allowsName(name[2:]) {
				t.Fatalf("%q: %s allowed %v, %s allowed %v", entry, below, one.allowsName(below), name[2:], one.allowsName(name[2:]))
			}
		default:
			if ip, ierr := netip.ParseAddr(name); ierr == nil {
				if !one.allowsAddress(ip) {
					t.Fatalf("address %q not allowed", entry)
				}
			} else if !one.allowsName(name) {
				t.Fatalf("host %q not allowed by name", entry)
			}
		}
	}
	if (rejected == 0) != (err == nil) || (err == nil) != (a != nil) {
		t.Fatalf("%q: %d entries rejected alone; the list: %v, %v", list, rejected, a, err)
	}
}

// checkDenySpellings checks that the deny list judges ip as it judges every
// other spelling of the same host, and that the dial-time check refuses
// each spelling the deny list refuses.
func checkDenySpellings(t *testing.T, ip netip.Addr, port uint16, zone string) {
	t.Helper()
	base := ip.Unmap()
	if b := base.As16(); base.Is6() && [12]byte(b[:12]) == [12]byte{0x00, 0x64, 0xff, 0x9b} {
		base = netip.AddrFrom4([4]byte(b[12:]))
	}
	want := checkDenyList(base) == nil
	spellings := []netip.Addr{ip, base, ip.WithZone(zone)}
	if base.Is4() {
		v4 := base.As4()
		nat64 := [16]byte{0x00, 0x64, 0xff, 0x9b}
		copy(nat64[12:], v4[:])
		spellings = append(spellings, netip.AddrFrom16(base.As16()), netip.AddrFrom16(nat64), netip.AddrFrom16(nat64).WithZone(zone))
	}
	for _, s := range spellings {
		if got := checkDenyList(s) == nil; got != want {
			t.Fatalf("deny list: %s allowed %v, %s allowed %v", s, got, base, want)
		}
		err := dialControl(checkDenyList)("tcp", netip.AddrPortFrom(s, port).String(), nil)
		if !want && err == nil {
			t.Fatalf("dial to %s allowed, which the deny list refuses", netip.AddrPortFrom(s, port))
		}
		if want && err != nil {
			t.Fatalf("dial to %s refused (%v), which the deny list allows", netip.AddrPortFrom(s, port), err)
		}
		if err != nil {
			if _, ok := errors.AsType[*refusedError](err); !ok {
				t.Fatalf("dial to %s refused with %T, not a refusal Send does not retry", s, err)
			}
		}
	}
}

// FuzzRetryAfter feeds a receiver's Retry-After to the default backoff:
// whatever it says, a pause is never negative, never longer than the
// backoff's 30 s cap unless the receiver asked for it, and what a receiver
// asks for is never longer than what is left of the Send's Retry-After
// budget (its attempt timeout); a Retry-After beyond it ends the Send
// instead.
func FuzzRetryAfter(f *testing.F) {
	for _, v := range []string{"", "0", "5", "30", "31", "-1", "+7", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "soon"} {
		f.Add(v, uint8(1), true, uint8(10))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewSender(Options{})
	f.Fuzz(func(t *testing.T, v string, retry uint8, tooMany bool, budgetSeconds uint8) {
		budget := time.Duration(budgetSeconds) * time.Second
		if d, ok := parseRetryAfter(v, now); ok && d < 0 {
			t.Fatalf("Retry-After %q: %s", v, d)
		}
		status := http.StatusServiceUnavailable
		if tooMany {
			status = http.StatusTooManyRequests
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {v}}}
		d, asked, ok := s.retryDelay(int(retry), resp, now, budget)
		if ok && (d < 0 || d > maxBackoff && !asked || asked && d > budget) {
			t.Fatalf("Retry-After %q, retry %d, budget %s: a pause of %s (asked %v)", v, retry, budget, d, asked)
		}
		if ra, parsed := parseRetryAfter(v, now); ok != (!parsed || ra <= max(defaultBackoff(int(retry)), budget)) {
			t.Fatalf("Retry-After %q (%s, %v), budget %s: pause allowed %v", v, ra, parsed, budget, ok)
		}
	})
}
