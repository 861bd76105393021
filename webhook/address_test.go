package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestDenyList(t *testing.T) {
	tests := []struct {
		addr    string
		refused bool
	}{
		{"169.254.169.254", true},
		{"169.254.170.2", true},
		{"169.254.0.1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"febf::1", true},
		{"224.0.0.251", true},
		{"ff02::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"fd00:ec2::254", true},
		{"100.100.100.200", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:0.0.0.0", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::6464:64c8", true},
		{"127.0.0.1", false},
		{"::1", false},
		{"10.96.0.10", false},
		{"172.16.0.1", false},
		{"192.168.1.10", false},
		{"fd00::1", false},
		{"fd00:ec2::253", false},
		{"100.100.100.201", false},
		{"100.64.0.1", false},
		{"169.253.255.255", false},
		{"169.255.0.1", false},
		{"8.8.8.8", false},
		{"2001:db8::1", false},
		{"::ffff:10.0.0.1", false},
		{"64:ff9b::808:808", false},
		// Platform endpoints outside link-local space, in every spelling,
		// and their neighbours, which are ordinary addresses.
		{"168.63.129.16", true},
		{"::ffff:168.63.129.16", true},
		{"64:ff9b::a83f:8110", true},
		{"168.63.129.15", false},
		{"168.63.129.17", false},
		{"192.0.0.192", true},
		{"::ffff:192.0.0.192", true},
		{"64:ff9b::c000:c0", true},
		{"192.0.0.191", false},
		{"192.0.0.193", false},
		{"fd20:ce::254", true},
		{"fd20:ce::253", false},
		{"fd00:ec2::23", true},
		{"fd00:ec2::22", false},
		// Link-local already: AWS ECS task metadata and the EKS Pod
		// Identity Agent over IPv4.
		{"169.254.170.23", true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := checkDenyList(netip.MustParseAddr(tt.addr))
			if (err != nil) != tt.refused {
				t.Errorf("checkDenyList(%s) = %v, want refused: %v", tt.addr, err, tt.refused)
			}
		})
	}
}

func TestSendRefusedAddress(t *testing.T) {
	srv, hits := hitCounter(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	refuseLoopback := func(ip netip.Addr) error {
		if ip.IsLoopback() {
			return errors.New("loopback")
		}
		return nil
	}
	tests := []struct {
		name  string
		url   string
		allow func(netip.Addr) error
	}{
		// Linux dials 0.0.0.0 as loopback: without the policy this would
		// reach the test server.
		{name: "unspecified address reaching a local server", url: fmt.Sprintf("http://0.0.0.0:%d/", port)},
		{name: "cloud metadata", url: "http://169.254.169.254/latest/meta-data/"},
		{name: "cloud metadata as IPv4-mapped IPv6", url: "http://[::ffff:169.254.169.254]/"},
		{name: "link-local", url: "http://169.254.10.10:8080/"},
		{name: "IPv6 metadata", url: "http://[fd00:ec2::254]/"},
		{name: "Google Cloud IPv6 metadata", url: "http://[fd20:ce::254]/computeMetadata/v1/"},
		{name: "EKS Pod Identity Agent over IPv6", url: "http://[fd00:ec2::23]/v1/credentials"},
		{name: "Azure WireServer", url: "http://168.63.129.16/machine?comp=goalstate"},
		{name: "Azure WireServer as NAT64", url: "http://[64:ff9b::a83f:8110]/"},
		{name: "Oracle Cloud metadata", url: "http://192.0.0.192/latest/"},
		// A DNS name is judged by the address it resolves to.
		{name: "name resolving to a refused address", url: fmt.Sprintf("http://localhost:%d/", port), allow: refuseLoopback},
		{name: "https is checked before the handshake", url: fmt.Sprintf("https://127.0.0.1:%d/", port), allow: refuseLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var judged []netip.Addr
			allow := tt.allow
			if allow == nil {
				allow = checkDenyList
			}
			s := NewSender(testOptions(func(o *Options) {
				o.Timeout = 2 * time.Second
				o.AllowAddress = func(ip netip.Addr) error {
					mu.Lock()
					judged = append(judged, ip)
					mu.Unlock()
					return allow(ip)
				}
			}))
			d, err := s.Send(t.Context(), tt.url, []byte("{}"), "k")
			if _, ok := errors.AsType[*refusedError](err); !ok {
				t.Fatalf("Send error = %v, want an address refusal", err)
			}
			if d.Attempts != 1 || d.StatusCode != 0 {
				t.Errorf("Delivery = %+v, want 1 attempt (refusals are not retried) and no status", d)
			}
			if hits.Load() != 0 {
				t.Errorf("server got %d requests, want 0", hits.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(judged) == 0 || slices.ContainsFunc(judged, func(ip netip.Addr) bool { return !ip.IsValid() }) {
				t.Errorf("AllowAddress saw %v, want the resolved addresses", judged)
			}
		})
	}
}

func TestDialControl(t *testing.T) {
	tests := []struct {
		address  string
		wantSeen string // the address AllowAddress is asked about; empty: not asked
	}{
		{address: "10.0.0.1:80", wantSeen: "10.0.0.1"},
		{address: "[::ffff:169.254.169.254]:80", wantSeen: "169.254.169.254"},
		{address: "[fe80::1%eth0]:443", wantSeen: "fe80::1"},
		{address: "not-an-address:80"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			var seen []string
			control := dialControl(func(ip netip.Addr) error {
				seen = append(seen, ip.String())
				return errors.New("no")
			})
			err := control("tcp", tt.address, nil)
			if _, ok := errors.AsType[*refusedError](err); !ok {
				t.Errorf("control(%q) = %v, want a refusal", tt.address, err)
			}
			want := []string{tt.wantSeen}
			if tt.wantSeen == "" {
				want = nil
			}
			if !slices.Equal(seen, want) {
				t.Errorf("AllowAddress asked about %v, want %v", seen, want)
			}
		})
	}
}
