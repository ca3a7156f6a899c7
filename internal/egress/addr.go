package egress

import (
	"fmt"
	"net/netip"
)

// A special range is refused as a destination; a "never" range is refused even
// inside an AllowPrivate prefix.
type special struct {
	prefix netip.Prefix
	name   string
	never  bool
}

func row(p, name string, never bool) special {
	return special{netip.MustParsePrefix(p), name, never}
}

// specials follows the IANA IPv4 and IPv6 special-purpose address registries (plus
// the clouds' metadata endpoints), most specific first so the reason is the precise
// one. Ranges the registries call globally reachable (AS112, AMT) are left out.
// IPv4-mapped, NAT64 and 6to4 addresses are judged by the IPv4 address they carry
// (CheckAddr), so they are not rows.
var specials = []special{
	row("169.254.169.254/32", "cloud metadata", true),
	row("fd00:ec2::254/128", "cloud metadata", true),
	row("100.100.100.200/32", "cloud metadata", true), // Alibaba
	row("192.0.0.192/32", "cloud metadata", true),     // Oracle
	row("127.0.0.0/8", "loopback", true),
	row("::1/128", "loopback", true),
	row("0.0.0.0/8", "unspecified (this network)", true),
	row("::/128", "unspecified", true),
	row("255.255.255.255/32", "broadcast", false),
	row("10.0.0.0/8", "private (RFC 1918)", false),
	row("172.16.0.0/12", "private (RFC 1918)", false),
	row("192.168.0.0/16", "private (RFC 1918)", false),
	row("100.64.0.0/10", "shared address space (CGNAT, RFC 6598)", false),
	row("169.254.0.0/16", "link-local", false),
	row("192.0.0.0/24", "IETF protocol assignments", false),
	row("192.0.2.0/24", "documentation", false),
	row("198.51.100.0/24", "documentation", false),
	row("203.0.113.0/24", "documentation", false),
	row("192.88.99.0/24", "6to4 relay anycast (deprecated)", false),
	row("198.18.0.0/15", "benchmarking (RFC 2544)", false),
	row("224.0.0.0/4", "multicast", false),
	row("240.0.0.0/4", "reserved", false),
	row("::/96", "IPv4-compatible (deprecated)", false),
	row("64:ff9b:1::/48", "NAT64 local use", false),
	row("100::/64", "discard only", false),
	row("100:0:0:1::/64", "dummy prefix", false),
	row("2001:db8::/32", "documentation", false),
	row("3fff::/20", "documentation", false),
	row("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)", false),
	row("5f00::/16", "SRv6 SIDs", false),
	row("fc00::/7", "unique local (ULA)", false),
	row("fe80::/10", "link-local", false),
	row("fec0::/10", "site-local (deprecated)", false),
	row("ff00::/8", "multicast", false),
}

var (
	mapped4   = netip.MustParsePrefix("::ffff:0:0/96")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

// AddrError reports a destination address the proxy refuses.
type AddrError struct {
	Addr   netip.Addr
	Reason string // which range: "loopback", "cloud metadata", …
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("address %s is %s", e.Addr, e.Reason)
}

// CheckAddr returns nil if the proxy may connect to a, else an *AddrError naming the
// special-purpose range it is in. An address in one of allowPrivate's prefixes is
// allowed unless it is loopback, unspecified or a cloud metadata endpoint: those are
// refused whatever the prefixes say, since they reach the host itself or its
// credentials. IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// addresses are judged by the IPv4 address they embed; a zone (fe80::1%eth0) is
// refused; so is every IPv6 address outside global unicast (2000::/3).
func CheckAddr(a netip.Addr, allowPrivate []netip.Prefix) error {
	if !a.IsValid() {
		return &AddrError{Addr: a, Reason: "not an address"}
	}
	if a.Zone() != "" {
		// Prefix.Contains never matches a zoned address: refuse before the table.
		return &AddrError{Addr: a, Reason: "scoped (has a zone)"}
	}
	if embedded, via, ok := embeddedIPv4(a); ok {
		if err := CheckAddr(embedded, allowPrivate); err != nil {
			return &AddrError{Addr: a, Reason: fmt.Sprintf("%s of %s", via, err.(*AddrError).Reason)}
		}
		if via == "IPv4-mapped" {
			return nil
		}
	}
	var hit *special
	for i := range specials {
		if specials[i].prefix.Contains(a) {
			hit = &specials[i]
			break
		}
	}
	if hit != nil && hit.never {
		return &AddrError{Addr: a, Reason: hit.name}
	}
	for _, p := range allowPrivate {
		if p.Contains(a) {
			return nil
		}
	}
	if hit != nil {
		return &AddrError{Addr: a, Reason: hit.name}
	}
	if a.Is6() && !global6.Contains(a) && !nat64.Contains(a) {
		return &AddrError{Addr: a, Reason: "reserved (outside 2000::/3)"}
	}
	return nil
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries to an IPv4 host:
// mapped (the kernel connects to it over IPv4), NAT64 (a translator does) or 6to4
// (a relay does).
func embeddedIPv4(a netip.Addr) (netip.Addr, string, bool) {
	if !a.Is6() {
		return netip.Addr{}, "", false
	}
	b := a.As16()
	switch {
	case mapped4.Contains(a):
		return a.Unmap(), "IPv4-mapped", true
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}
