package egress

import (
	"net/netip"
	"strings"
	"testing"
)

var (
	pfx     = netip.MustParsePrefix
	private = []netip.Prefix{pfx("10.0.0.0/8"), pfx("198.18.0.0/15"), pfx("fc00::/7"),
		pfx("127.0.0.0/8"), pfx("169.254.0.0/16"), pfx("0.0.0.0/0"), pfx("::/0")}
)

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		reason   string // "" when allowed
		withOpen string // the reason with every range open in AllowPrivate; "" when allowed
	}{
		{"8.8.8.8", "", ""},
		{"1.1.1.1", "", ""},
		{"2606:4700::1111", "", ""},
		{"::ffff:8.8.8.8", "", ""},
		{"64:ff9b::808:808", "", ""}, // NAT64 of a public address: how IPv6-only networks reach IPv4
		{"2002:808:808::1", "", ""},
		{"127.0.0.1", "loopback", "loopback"},
		{"127.255.255.254", "loopback", "loopback"},
		{"::1", "loopback", "loopback"},
		{"0.0.0.0", "unspecified", "unspecified"},
		{"0.1.2.3", "unspecified", "unspecified"},
		{"::", "unspecified", "unspecified"},
		{"169.254.169.254", "cloud metadata", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata", "cloud metadata"},
		{"100.100.100.200", "cloud metadata", "cloud metadata"},
		{"192.0.0.192", "cloud metadata", "cloud metadata"},
		{"::ffff:169.254.169.254", "IPv4-mapped of cloud metadata", "IPv4-mapped of cloud metadata"},
		{"::ffff:127.0.0.1", "IPv4-mapped of loopback", "IPv4-mapped of loopback"},
		{"64:ff9b::7f00:1", "NAT64 of loopback", "NAT64 of loopback"},
		{"64:ff9b::a9fe:a9fe", "NAT64 of cloud metadata", "NAT64 of cloud metadata"},
		{"2002:7f00:1::", "6to4 of loopback", "6to4 of loopback"},
		{"2002:a9fe:a9fe::1", "6to4 of cloud metadata", "6to4 of cloud metadata"},
		{"10.1.2.3", "private", ""},
		{"172.16.0.1", "private", ""},
		{"172.31.255.255", "private", ""},
		{"192.168.1.1", "private", ""},
		{"::ffff:10.0.0.1", "IPv4-mapped of private", ""},
		{"2002:0a00:0001::", "6to4 of private", ""},
		{"100.64.0.1", "CGNAT", ""},
		{"100.127.255.255", "CGNAT", ""},
		{"169.254.1.1", "link-local", ""},
		{"fe80::1", "link-local", ""},
		{"fe80::1%eth0", "zone", "zone"},
		{"224.0.0.1", "multicast", ""},
		{"239.255.255.250", "multicast", ""},
		{"ff02::1", "multicast", ""},
		{"255.255.255.255", "broadcast", ""},
		{"240.0.0.1", "reserved", ""},
		{"192.0.2.1", "documentation", ""},
		{"198.51.100.1", "documentation", ""},
		{"203.0.113.1", "documentation", ""},
		{"2001:db8::1", "documentation", ""},
		{"3fff::1", "documentation", ""},
		{"198.18.0.1", "benchmarking", ""},
		{"198.19.255.255", "benchmarking", ""},
		{"192.0.0.8", "IETF protocol", ""},
		{"192.88.99.1", "6to4 relay", ""},
		{"fc00::1", "unique local", ""},
		{"fd12:3456::1", "unique local", ""},
		{"fec0::1", "site-local", ""},
		{"::7f00:1", "IPv4-compatible", ""},
		{"::a00:1", "IPv4-compatible", ""},
		{"64:ff9b:1::1", "NAT64 local", ""},
		{"100::1", "discard", ""},
		{"2001::1", "Teredo", ""},
		{"2001:2::1", "benchmarking", ""},
		{"5f00::1", "SRv6", ""},
		{"4000::1", "outside 2000::/3", ""},
		{"::ffff:0:7f00:1", "outside 2000::/3", ""}, // IPv4-translated: not mapped, not global
	} {
		a := netip.MustParseAddr(tc.addr)
		check := func(open []netip.Prefix, want string) {
			err := CheckAddr(a, open)
			switch {
			case want == "" && err != nil:
				t.Errorf("CheckAddr(%s, %v) = %v; want allowed", a, open, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("CheckAddr(%s, %v) = %v; want %q", a, open, err, want)
			}
		}
		check(nil, tc.reason)
		check(private, tc.withOpen)
	}
}

// TestCheckAddrEmbeddings: every special IPv4 address is refused in each IPv6 form
// that reaches it.
func TestCheckAddrEmbeddings(t *testing.T) {
	for _, s := range specials {
		if !s.prefix.Addr().Is4() {
			continue
		}
		v4 := s.prefix.Addr().As4()
		forms := map[string]netip.Addr{
			"mapped": netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
			"nat64":  netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
			"6to4":   netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3]}),
		}
		for form, a := range forms {
			if err := CheckAddr(a, nil); err == nil {
				t.Errorf("%s form %s of %s (%s) allowed", form, a, s.prefix, s.name)
			}
		}
	}
}
