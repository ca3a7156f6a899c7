package egress

import (
	"net/netip"
	"strings"
)

// ParseIPLiteral reports whether host denotes an IP address to some parser a client
// might use, and which. Besides what netip accepts (dotted decimal, IPv6 with an
// optional zone, IPv4-mapped IPv6), it accepts brackets around IPv6 and, for IPv4,
// the forms of BSD's inet_aton that glibc, curl and browsers accept: one to four
// parts, each decimal, octal (leading 0) or hex (0x), the last filling the remaining
// bytes — 2130706433, 0177.0.0.1, 0x7f.1, 127.1 are all 127.0.0.1. A trailing dot is
// ignored, as browsers ignore it. The address is unmapped only by callers: ::ffff:
// 127.0.0.1 is returned as written.
func ParseIPLiteral(host string) (netip.Addr, bool) {
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		return a, err == nil && a.Is6()
	}
	if strings.IndexByte(host, ':') >= 0 {
		a, err := netip.ParseAddr(host)
		return a, err == nil
	}
	return parseInetAton(strings.TrimSuffix(host, "."))
}

// parseInetAton is inet_aton(3) without its tolerance for trailing whitespace (a
// space is never valid in a host here).
func parseInetAton(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	// The last part fills the bytes the others left: 32, 24, 16 or 8 bits.
	if vals[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var u uint32
	for i := 0; i < n-1; i++ {
		u |= uint32(vals[i]) << (24 - 8*i)
	}
	u |= uint32(vals[n-1])
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}), true
}

// parseAtonPart parses one part as inet_aton does: 0x or 0X and hex digits (none
// means 0), 0 and octal digits, or decimal. Values past 32 bits fail.
func parseAtonPart(p string) (uint64, bool) {
	base, digits := uint64(10), p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, true
		}
	case len(p) >= 2 && p[0] == '0':
		base, digits = 8, p[1:]
	case p == "":
		return 0, false
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		d, ok := digitValue(digits[i])
		if !ok || d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}
