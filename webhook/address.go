package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// The address policy has two parts. The deny list (checkDenyList) always
// applies: it refuses what no webhook has a reason to reach and what would
// hand a manifest author the node's credentials. The allow list (AllowList,
// nsman's --webhook-allow) is optional: when set, only the receivers it names
// are dialled at all. Both are checked where they cannot be bypassed: on the
// address the dialer is about to connect to, after DNS resolution, on every
// attempt.

// platformEndpoints are the cloud platform endpoints outside link-local
// space (and the best known one inside it), with what each one is. Link-local
// ones such as AWS ECS task metadata (169.254.170.2) or the EKS Pod Identity
// Agent (169.254.170.23) are refused as link-local already.
var platformEndpoints = map[netip.Addr]string{
	// AWS, GCP, Azure, OpenStack, DigitalOcean and others: instance metadata.
	netip.MustParseAddr("169.254.169.254"): "cloud metadata address",
	// AWS instance metadata over IPv6 (Nitro instances).
	netip.MustParseAddr("fd00:ec2::254"): "cloud metadata address (AWS, IPv6)",
	// AWS EKS Pod Identity Agent over IPv6: it hands pods their AWS credentials.
	netip.MustParseAddr("fd00:ec2::23"): "EKS Pod Identity Agent address (AWS, IPv6)",
	// Google Compute Engine metadata over IPv6 (IPv6-only and dual-stack VMs).
	netip.MustParseAddr("fd20:ce::254"): "cloud metadata address (Google Cloud, IPv6)",
	// Alibaba Cloud instance metadata.
	netip.MustParseAddr("100.100.100.200"): "cloud metadata address (Alibaba Cloud)",
	// Azure WireServer: VM agent configuration and extension settings, their protected settings included.
	netip.MustParseAddr("168.63.129.16"): "Azure WireServer address",
	// Oracle Cloud instance metadata, the address outside link-local space.
	netip.MustParseAddr("192.0.0.192"): "cloud metadata address (Oracle Cloud)",
}

// checkDenyList is the default address policy. In-cluster Services (private
// ranges, ULAs, loopback for a sidecar) are the normal receivers, so it
// refuses only link-local addresses (where cloud metadata and node agents
// listen), the unspecified address (which Linux dials as loopback) and the
// platform endpoints outside link-local space.
func checkDenyList(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	// An IPv4 address behind the well-known NAT64 prefix (RFC 6052) is the
	// same host; judge it as IPv4.
	if b := ip.As16(); ip.Is6() && [12]byte(b[:12]) == [12]byte{0x00, 0x64, 0xff, 0x9b} {
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	if what, ok := platformEndpoints[ip]; ok {
		return errors.New(what)
	}
	switch {
	case !ip.IsValid():
		return errors.New("invalid address")
	case ip.IsUnspecified():
		return errors.New("unspecified address")
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return errors.New("link-local address")
	}
	return nil
}

// refusedError is a dial that the address policy stopped before any packet
// was sent.
type refusedError struct {
	address string
	err     error
}

func (e *refusedError) Error() string {
	return "address " + e.address + " refused: " + e.err.Error()
}

func (e *refusedError) Unwrap() error { return e.err }

// notAllowedError is a receiver the allow list does not name: neither its
// host nor, for a host judged by address, the address it resolved to.
type notAllowedError struct{ host string }

func (e *notAllowedError) Error() string {
	return "host " + e.host + " is not in --webhook-allow"
}

// dialControl runs check on the address the dialer is about to connect to:
// after DNS resolution and on every attempt, which is where a check cannot
// be bypassed by a name or a redirect.
func dialControl(check func(netip.Addr) error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &refusedError{address: address, err: err}
		}
		ip := ap.Addr().Unmap().WithZone("")
		if err := check(ip); err != nil {
			return &refusedError{address: ip.String(), err: err}
		}
		return nil
	}
}

// AllowList names the only receivers a Sender may dial: nsman's
// --webhook-allow, for clusters where whoever writes a NamespaceManager
// should not choose where nsman connects. A receiver is allowed when its
// URL's host is one of the host names, or ends in one of the *.domain
// suffixes, or when the address it resolves to (or the IP address the URL
// holds) lies in one of the CIDRs. The deny list applies all the same. The
// zero AllowList, like a nil one, allows every receiver.
type AllowList struct {
	entries  []string        // as given, for Policy
	hosts    map[string]bool // exact host names, lower case, without a trailing dot
	suffixes []string        // ".example.com" for *.example.com
	prefixes []netip.Prefix
}

// ParseAllowList reads the entries of an allow list: host names
// (hook.example.com), *.domain suffixes (*.example.com: every name below
// example.com, not example.com itself), CIDRs (10.20.0.0/16, fd00::/8) and IP
// addresses (a CIDR of one address). It names every entry it rejects.
func ParseAllowList(entries []string) (*AllowList, error) {
	a := &AllowList{}
	var errs []error
	for _, entry := range entries {
		if err := a.add(entry); err != nil {
			errs = append(errs, fmt.Errorf("entry %q: %w (want a host name, *.domain or a CIDR such as 10.20.0.0/16)", entry, err))
			continue
		}
		a.entries = append(a.entries, strings.TrimSpace(entry))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *AllowList) add(entry string) error {
	s := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case s == "":
		return errors.New("empty")
	case s == "*":
		return errors.New("it would allow every host; leave the list empty to allow every receiver")
	case strings.Contains(s, "://"):
		return errors.New("a URL, not a host")
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return errors.New("not a CIDR")
		}
		if p.Addr().Is4In6() {
			return errors.New("an IPv4-mapped range; write it in IPv4 form")
		}
		if p != p.Masked() {
			return fmt.Errorf("host bits set: the range is %s", p.Masked())
		}
		a.prefixes = append(a.prefixes, p)
		return nil
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		if ip.Zone() != "" {
			return errors.New("an address with a zone")
		}
		ip = ip.Unmap()
		a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	if suffix, ok := strings.CutPrefix(s, "*."); ok {
		if err := checkHostName(strings.TrimSuffix(suffix, ".")); err != nil {
			return err
		}
		a.suffixes = append(a.suffixes, "."+strings.TrimSuffix(suffix, "."))
		return nil
	}
	if strings.Contains(s, "*") {
		return errors.New(`a wildcard other than a leading "*."`)
	}
	host := strings.TrimSuffix(s, ".")
	if err := checkHostName(host); err != nil {
		return err
	}
	if a.hosts == nil {
		a.hosts = map[string]bool{}
	}
	a.hosts[host] = true
	return nil
}

// checkHostName accepts DNS names: dot-separated labels of letters, digits,
// hyphens and underscores, not one that could be mistaken for an IPv4
// address. Hand-written rather than apimachinery's validation: this package
// imports only the standard library.
func checkHostName(name string) error {
	if name == "" {
		return errors.New("no host name")
	}
	if len(name) > 253 {
		return errors.New("a host name longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("an empty label")
		}
		if len(l) > 63 {
			return fmt.Errorf("label %q longer than 63 characters", l)
		}
		for _, c := range l {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q, which no host name has", c)
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("label %q begins or ends with a hyphen", l)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("neither an IP address nor a host name")
	}
	return nil
}

// Policy says, in a sentence each, which receivers the platform's webhooks
// (trusted managers, rules, notifications) and tenants' webhooks may reach
// under this allow list.
func (a *AllowList) Policy() (platform, tenant string) {
	const never = "never link-local addresses, the unspecified address or cloud metadata endpoints"
	if !a.restricts() {
		return "any receiver but link-local addresses, the unspecified address and cloud metadata endpoints",
			"public addresses and Services of their own namespace (" + never + ")"
	}
	only := strings.Join(a.entries, ", ")
	return "only receivers --webhook-allow admits: " + only + " (" + never + ")",
		"Services of their own namespace, and receivers --webhook-allow admits: " + only + " (" + never + ")"
}

// restricts reports whether the list limits anything.
func (a *AllowList) restricts() bool {
	return a != nil && (len(a.hosts) > 0 || len(a.suffixes) > 0 || len(a.prefixes) > 0)
}

// allowsName reports whether host, a URL's host, is allowed by name. An IP
// address is never allowed by name: the CIDRs judge it.
func (a *AllowList) allowsName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	if a.hosts[host] {
		return true
	}
	for _, s := range a.suffixes {
		if len(host) > len(s) && strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// allowsAddress reports whether ip lies in one of the CIDRs.
func (a *AllowList) allowsAddress(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// check refuses host, a URL's host, before any network I/O when no address
// it could resolve to would change the answer: a host not allowed by name
// when there are no CIDRs, or an IP address outside them.
func (a *AllowList) check(host string) error {
	if !a.restricts() || a.allowsName(host) {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !a.allowsAddress(ip) {
			return &notAllowedError{host: host}
		}
		return nil
	}
	if len(a.prefixes) == 0 {
		return &notAllowedError{host: host}
	}
	return nil
}

// addressCheck returns the check the dialer runs on each address that host
// resolved to: the deny list, and, when the allow list does not allow host
// by name, the allow list's CIDRs.
func (a *AllowList) addressCheck(host string, deny func(netip.Addr) error) func(netip.Addr) error {
	if !a.restricts() || a.allowsName(host) {
		return deny
	}
	return func(ip netip.Addr) error {
		if err := deny(ip); err != nil {
			return err
		}
		if !a.allowsAddress(ip) {
			return &notAllowedError{host: host}
		}
		return nil
	}
}
