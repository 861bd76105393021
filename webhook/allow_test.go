package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseAllowList(t *testing.T) {
	valid := []string{
		"hook.example.com",
		"Hook.Example.COM.",
		"receiver.tools.svc",
		"localhost",
		"my_hook.internal",
		"*.example.com",
		"*.svc.cluster.local",
		"10.20.0.0/16",
		"fd00::/8",
		"0.0.0.0/0",
		"10.0.0.5",
		"fd00::5",
		"::ffff:10.0.0.5",
		" spaced.example.com ",
	}
	for _, entry := range valid {
		t.Run("valid "+entry, func(t *testing.T) {
			a, err := ParseAllowList([]string{entry})
			if err != nil {
				t.Fatalf("ParseAllowList(%q): %v", entry, err)
			}
			if !a.restricts() {
				t.Errorf("ParseAllowList(%q) restricts nothing", entry)
			}
		})
	}

	invalid := []struct {
		entry string
		why   string // part of the message
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"http://hook.example.com", "a URL"},
		{"https://hook.example.com/x", "a URL"},
		{"hook.example.com:8080", "character"},
		{"hook.example.com/path", "not a CIDR"},
		{"10.20.0.0/33", "not a CIDR"},
		{"10.20.0.1/16", "the range is 10.20.0.0/16"},
		{"fd00::1/8", "the range is fd00::/8"},
		{"::ffff:10.0.0.0/104", "IPv4 form"},
		{"fe80::1%eth0", "zone"},
		{"*", "every host"},
		{"*.", "no host name"},
		{"*example.com", "wildcard"},
		{"a.*.example.com", "wildcard"},
		{"*.*.example.com", "character"},
		{"hook..example.com", "empty label"},
		{".example.com", "empty label"},
		{"-hook.example.com", "hyphen"},
		{"hook-.example.com", "hyphen"},
		{"hook example.com", "character"},
		{"héok.example.com", "character"},
		{"10.0.0", "neither an IP address nor a host name"},
		{"*.0.1", "neither an IP address nor a host name"},
		{strings.Repeat("a", 64) + ".example.com", "longer than 63"},
		{strings.Repeat("a.", 127) + "com", "longer than 253"},
	}
	for _, tt := range invalid {
		t.Run(fmt.Sprintf("invalid %q", tt.entry), func(t *testing.T) {
			a, err := ParseAllowList([]string{"ok.example.com", tt.entry})
			if err == nil {
				t.Fatalf("ParseAllowList(%q) = %+v, want an error", tt.entry, a)
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("entry %q", tt.entry)) || !strings.Contains(msg, tt.why) {
				t.Errorf("error %q, want it to name entry %q and say %q", msg, tt.entry, tt.why)
			}
		})
	}

	t.Run("every bad entry is named", func(t *testing.T) {
		_, err := ParseAllowList([]string{"a..b", "ok.example.com", "10.0.0.1/8"})
		if err == nil || !strings.Contains(err.Error(), `"a..b"`) || !strings.Contains(err.Error(), `"10.0.0.1/8"`) {
			t.Errorf("error %v, want both bad entries named", err)
		}
	})
	t.Run("no entries restrict nothing", func(t *testing.T) {
		for _, entries := range [][]string{nil, {}} {
			a, err := ParseAllowList(entries)
			if err != nil || a.restricts() {
				t.Errorf("ParseAllowList(%q) = %+v, %v; want a list that restricts nothing", entries, a, err)
			}
		}
		var none *AllowList
		if none.restricts() || none.check("anything.example.com") != nil {
			t.Error("a nil AllowList restricts")
		}
	})
}

func TestAllowListByName(t *testing.T) {
	a, err := ParseAllowList([]string{"hook.example.com", "*.example.org", "*.svc.cluster.local.", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"hook.example.com", true},
		{"HOOK.Example.com", true},
		{"hook.example.com.", true},
		{"other.example.com", false},
		{"example.com", false},
		{"a.hook.example.com", false},
		{"hook.example.com.evil.test", false},
		{"a.example.org", true},
		{"a.b.example.org", true},
		{"A.B.Example.Org.", true},
		{"example.org", false},
		{"badexample.org", false},
		{".example.org", false},
		{"example.org.evil.test", false},
		{"receiver.tools.svc.cluster.local", true},
		{"svc.cluster.local", false},
		// An IP address is judged by the CIDRs, never by name.
		{"10.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := a.allowsName(tt.host); got != tt.want {
				t.Errorf("allowsName(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestAllowListCheck(t *testing.T) {
	deny := func(netip.Addr) error { return nil }
	tests := []struct {
		name    string
		entries []string
		host    string
		// early: refused before any network I/O; dialled: the addresses
		// the dialer may connect to, and refused: those it may not.
		early    bool
		dialled  []string
		refused  []string
		wantHost string // named in the refusal
	}{
		{name: "no list", entries: nil, host: "anything.example.com", dialled: []string{"10.0.0.1", "8.8.8.8"}},
		{name: "host allowed by name dials what it resolves to", entries: []string{"hook.example.com"}, host: "hook.example.com", dialled: []string{"10.0.0.1", "8.8.8.8"}},
		{name: "suffix", entries: []string{"*.example.com"}, host: "a.b.example.com", dialled: []string{"192.168.1.1"}},
		{name: "other name, no CIDRs", entries: []string{"hook.example.com"}, host: "evil.test", early: true, wantHost: "evil.test"},
		{name: "the suffix's own domain", entries: []string{"*.example.com"}, host: "example.com", early: true, wantHost: "example.com"},
		{name: "other name judged by address", entries: []string{"hook.example.com", "10.20.0.0/16"}, host: "svc.test", dialled: []string{"10.20.3.4"}, refused: []string{"10.21.0.1", "127.0.0.1"}, wantHost: "svc.test"},
		{name: "IP in a CIDR", entries: []string{"10.20.0.0/16"}, host: "10.20.3.4", dialled: []string{"10.20.3.4"}},
		{name: "IP outside the CIDRs", entries: []string{"10.20.0.0/16"}, host: "10.21.0.1", early: true, wantHost: "10.21.0.1"},
		{name: "IP allowed by a host entry? never", entries: []string{"hook.example.com"}, host: "127.0.0.1", early: true, wantHost: "127.0.0.1"},
		{name: "IPv6 in a CIDR", entries: []string{"fd00::/8"}, host: "fd12::1", dialled: []string{"fd12::1"}, refused: []string{"fe12::1"}, wantHost: "fd12::1"},
		{name: "IPv4-mapped address", entries: []string{"10.0.0.0/8"}, host: "::ffff:10.1.2.3", dialled: []string{"10.1.2.3"}},
		{name: "single address", entries: []string{"10.0.0.5"}, host: "10.0.0.5", dialled: []string{"10.0.0.5"}},
		{name: "single address, another", entries: []string{"10.0.0.5"}, host: "10.0.0.6", early: true, wantHost: "10.0.0.6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAllowList(tt.entries)
			if err != nil {
				t.Fatal(err)
			}
			err = a.check(tt.host)
			if tt.early {
				var na *notAllowedError
				if !errors.As(err, &na) || !strings.Contains(err.Error(), "host "+tt.wantHost+" is not in --webhook-allow") {
					t.Errorf("check(%q) = %v, want host %s not in --webhook-allow", tt.host, err, tt.wantHost)
				}
				return
			}
			if err != nil {
				t.Fatalf("check(%q) = %v, want it left to the dialer", tt.host, err)
			}
			checkAddr := a.addressCheck(tt.host, deny)
			for _, ip := range tt.dialled {
				if err := checkAddr(netip.MustParseAddr(ip)); err != nil {
					t.Errorf("dial %s for host %s refused: %v", ip, tt.host, err)
				}
			}
			for _, ip := range tt.refused {
				if err := checkAddr(netip.MustParseAddr(ip)); err == nil || !strings.Contains(err.Error(), "host "+tt.wantHost+" is not in --webhook-allow") {
					t.Errorf("dial %s for host %s = %v, want it refused, naming the host", ip, tt.host, err)
				}
			}
		})
	}
}

// TestAllowListKeepsTheDenyList: an allowed host, name or address, is still
// refused the addresses of the deny list.
func TestAllowListKeepsTheDenyList(t *testing.T) {
	a, err := ParseAllowList([]string{"hook.example.com", "0.0.0.0/0", "::/0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"hook.example.com", "other.example.com"} {
		check := a.addressCheck(host, checkDenyList)
		for _, ip := range []string{"169.254.169.254", "168.63.129.16", "192.0.0.192", "0.0.0.0", "fe80::1", "fd20:ce::254"} {
			if err := check(netip.MustParseAddr(ip)); err == nil {
				t.Errorf("host %s: %s allowed", host, ip)
			}
		}
		if err := check(netip.MustParseAddr("10.0.0.1")); err != nil {
			t.Errorf("host %s: 10.0.0.1 refused: %v", host, err)
		}
	}
}

// TestSendAllowList sends to a real receiver on 127.0.0.1 under allow lists
// that do and do not cover it, by name and by address.
func TestSendAllowList(t *testing.T) {
	srv, hits := hitCounter(t)
	port := fmt.Sprint(srv.Listener.Addr().(*net.TCPAddr).Port)
	byIP := "http://127.0.0.1:" + port + "/hook"
	byName := "http://localhost:" + port + "/hook"
	refuseLoopback := func(ip netip.Addr) error {
		if ip.IsLoopback() {
			return errors.New("loopback")
		}
		return nil
	}
	tests := []struct {
		name         string
		allow        []string
		allowAddress func(netip.Addr) error
		url          string
		wantAttempts int    // 0 with wantErr: refused before any network I/O
		wantErr      string // empty: delivered
	}{
		{name: "no allow list", url: byIP, wantAttempts: 1},
		{name: "IP in 127.0.0.0/8", allow: []string{"127.0.0.0/8"}, url: byIP, wantAttempts: 1},
		{name: "IP is 127.0.0.1/32", allow: []string{"10.0.0.0/8", "127.0.0.1/32"}, url: byIP, wantAttempts: 1},
		{name: "IP outside 10.0.0.0/8", allow: []string{"10.0.0.0/8"}, url: byIP, wantErr: "host 127.0.0.1 is not in --webhook-allow"},
		{name: "IP not allowed by a host entry", allow: []string{"localhost"}, url: byIP, wantErr: "host 127.0.0.1 is not in --webhook-allow"},
		{name: "name allowed", allow: []string{"localhost"}, url: byName, wantAttempts: 1},
		{name: "name in another case", allow: []string{"LocalHost"}, url: byName, wantAttempts: 1},
		{name: "name not allowed, no CIDRs", allow: []string{"hook.example.com", "*.localhost"}, url: byName, wantErr: "host localhost is not in --webhook-allow"},
		{name: "name resolving into a CIDR", allow: []string{"127.0.0.0/8"}, url: byName, wantAttempts: 1},
		{name: "name resolving outside the CIDRs", allow: []string{"10.0.0.0/8", "fd00::/8"}, url: byName, wantAttempts: 1, wantErr: "host localhost is not in --webhook-allow"},
		{name: "allowed name, denied address", allow: []string{"localhost"}, allowAddress: refuseLoopback, url: byName, wantAttempts: 1, wantErr: "refused: loopback"},
		{name: "allowed IP, denied address", allow: []string{"127.0.0.0/8"}, allowAddress: refuseLoopback, url: byIP, wantAttempts: 1, wantErr: "refused: loopback"},
		{name: "unspecified address in an allowed CIDR", allow: []string{"0.0.0.0/0"}, url: "http://0.0.0.0:" + port + "/", wantAttempts: 1, wantErr: "refused: unspecified address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			allow, err := ParseAllowList(tt.allow)
			if err != nil {
				t.Fatal(err)
			}
			s := NewSender(testOptions(func(o *Options) {
				o.Allow = allow
				o.AllowAddress = tt.allowAddress
			}))
			d, err := s.Send(testContext(t, 10*time.Second), tt.url, []byte("{}"), "k")
			if tt.wantErr == "" {
				if err != nil || d.StatusCode != 200 || hits.Load() != 1 {
					t.Fatalf("Send = %+v, %v with %d requests received; want it delivered", d, err, hits.Load())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Send error = %v, want one saying %q", err, tt.wantErr)
			}
			if tt.wantAttempts > 0 {
				if _, ok := errors.AsType[*refusedError](err); !ok {
					t.Errorf("Send error = %v, want an address refusal", err)
				}
			}
			if d.Attempts != tt.wantAttempts || d.StatusCode != 0 || hits.Load() != 0 {
				t.Errorf("Delivery = %+v with %d requests received; want %d attempts (a refusal is not retried) and nothing received",
					d, hits.Load(), tt.wantAttempts)
			}
		})
	}
}

// TestPolicySaysWhatTheChecksDo ties each sentence of Policy to the checks:
// without an allow list a tenant is kept to public addresses and the
// platform is not; with one, both are kept to it.
func TestPolicySaysWhatTheChecksDo(t *testing.T) {
	private := netip.MustParseAddr("10.1.2.3")
	var none *AllowList
	platform, tenant := none.Policy()
	if none.tenantCheck("hook.example", checkDenyList)(private) == nil || !strings.HasPrefix(tenant, "public addresses") {
		t.Errorf("no allow list: tenant sentence %q, or a tenant may reach %s", tenant, private)
	}
	if none.addressCheck("hook.example", checkDenyList)(private) != nil || !strings.HasPrefix(platform, "any receiver but link-local") {
		t.Errorf("no allow list: platform sentence %q, or the platform may not reach %s", platform, private)
	}
	list, err := ParseAllowList([]string{"hooks.example.com", " 10.1.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	platform, tenant = list.Policy()
	for _, s := range []string{platform, tenant} {
		if !strings.Contains(s, "hooks.example.com, 10.1.0.0/16") || !strings.Contains(s, "never link-local") {
			t.Errorf("with an allow list: %q, want its entries and the deny list named", s)
		}
	}
	if list.tenantCheck("other.example", checkDenyList)(private) != nil || list.addressCheck("other.example", checkDenyList)(netip.MustParseAddr("10.2.0.1")) == nil {
		t.Error("with an allow list the checks do not follow it")
	}
}
