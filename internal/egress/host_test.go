package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCanonicalHost(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	for _, tc := range []struct{ in, want string }{
		{"example.com", "example.com"},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"XN--BCHER-KVA.example", "xn--bcher-kva.example"},
		{"ｅｘａｍｐｌｅ．ｃｏｍ", "example.com"}, // fullwidth, mapped as browsers map it
		{"r3---sn-abc.googlevideo.com", "r3---sn-abc.googlevideo.com"},
		{"localhost", "localhost"},
		{"a1.b-2.c3", "a1.b-2.c3"},
		{long63 + ".com", long63 + ".com"},
	} {
		got, err := CanonicalHost(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCanonicalHostRefuses covers the parser differentials peers were bitten by: a
// NUL that an endsWith check reads past, CR/LF that split a header, separators that
// other parsers read as userinfo, path or port.
func TestCanonicalHostRefuses(t *testing.T) {
	for _, in := range []string{
		"", ".", "..", "example.com..", ".example.com", "a..b",
		"allowed.com\x00.evil.com", "evil.com\x00.allowed.com", "a\r\nHost: b", "a\nb", "a\tb",
		"exa mple.com", " example.com", "example.com ",
		"evil.com%00.allowed.com", "a%2eb", "user@allowed.com", "allowed.com@evil.com",
		"allowed.com/evil", "allowed.com\\evil", "a:80", "a_b.com", "a*b.com", "a,b", "a;b",
		"-a.com", "a-.com", "xn--zz.example", "xn--.com",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 127) + "ab",
		"ａ／ｂ", "ａ＠ｂ", // fullwidth '/' and '@'
		"\xff.com", "exa\u200dmple\u0000.com",
	} {
		if got, err := CanonicalHost(in); err == nil || !errors.Is(err, ErrBadHost) {
			t.Errorf("CanonicalHost(%q) = %q, %v; want an ErrBadHost", in, got, err)
		}
	}
}

// TestCanonicalHostLiterals: every spelling of an address a client might accept is
// recognised as that address, so none of them is taken for a name.
func TestCanonicalHostLiterals(t *testing.T) {
	for _, tc := range []struct{ in, addr string }{
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
		{"2852039166", "169.254.169.254"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"[::ffff:7f00:1]", "::ffff:127.0.0.1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"１２７.０.０.１", "127.0.0.1"}, // fullwidth digits map to ASCII
		{"0x", "0.0.0.0"},
		{"1.2.3.4", "1.2.3.4"},
		{"1.2.3.4.5", ""}, // ends in a number, not an address: refused all the same
		{"example.123", ""},
		{"example.0x1f", ""},
	} {
		_, err := CanonicalHost(tc.in)
		var lit *LiteralError
		if !errors.As(err, &lit) {
			t.Errorf("CanonicalHost(%q): %v; want a LiteralError", tc.in, err)
			continue
		}
		if tc.addr == "" {
			if lit.Addr.IsValid() {
				t.Errorf("CanonicalHost(%q) denotes %s; want malformed", tc.in, lit.Addr)
			}
		} else if lit.Addr != netip.MustParseAddr(tc.addr) {
			t.Errorf("CanonicalHost(%q) denotes %s; want %s", tc.in, lit.Addr, tc.addr)
		}
	}
}

func TestParseInetAton(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" for invalid
	}{
		{"1.2.3.4", "1.2.3.4"},
		{"1.2.65535", "1.2.255.255"},
		{"1.16777215", "1.255.255.255"},
		{"4294967295", "255.255.255.255"},
		{"0", "0.0.0.0"},
		{"0x.0x.0x.0x", "0.0.0.0"},
		{"010.010.010.010", "8.8.8.8"},
		{"0xff.0xff.0xff.0xff", "255.255.255.255"},
		{"4294967296", ""},
		{"256.0.0.1", ""},
		{"1.2.3.256", ""},
		{"1.2.65536", ""},
		{"08.0.0.1", ""},
		{"0x100.0.0.1", ""},
		{"0xg", ""},
		{"1..2", ""},
		{"", ""},
		{"1.2.3.4.5", ""},
		{"99999999999999999999", ""},
		{"+1.2.3.4", ""},
		{"1.2.3.-4", ""},
	} {
		a, ok := parseInetAton(tc.in)
		switch {
		case tc.want == "" && ok:
			t.Errorf("parseInetAton(%q) = %s; want invalid", tc.in, a)
		case tc.want != "" && (!ok || a != netip.MustParseAddr(tc.want)):
			t.Errorf("parseInetAton(%q) = %s, %v; want %s", tc.in, a, ok, tc.want)
		}
	}
}
