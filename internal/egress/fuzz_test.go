package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzCanonicalHost: whatever the input, a canonical name is lowercase letters,
// digits, hyphens and single dots, is not an address, and is its own canonical
// form; an ASCII name only loses its case and one trailing dot.
func FuzzCanonicalHost(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "bücher.example", "xn--bcher-kva.example",
		"a\x00b", "0x7f.1", "1.2.3.4.5", "ｅｘａｍｐｌｅ．ｃｏｍ", "[::1]", "a..b", "-a", "r3---sn.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := CanonicalHost(s)
		if err != nil {
			return
		}
		if checkLabels(out) != nil || strings.Trim(out, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			t.Fatalf("CanonicalHost(%q) = %q: not LDH", s, out)
		}
		if _, ok := ParseIPLiteral(out); ok || endsInNumber(out) {
			t.Fatalf("CanonicalHost(%q) = %q: an address", s, out)
		}
		if again, err := CanonicalHost(out); err != nil || again != out {
			t.Fatalf("CanonicalHost(%q) = %q, but CanonicalHost(%q) = %q, %v", s, out, out, again, err)
		}
		if isASCII(s) && out != strings.ToLower(strings.TrimSuffix(s, ".")) {
			t.Fatalf("CanonicalHost(%q) = %q: an ASCII name changed", s, out)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzMatch: the matcher allows a host only by the documented rule, checked here
// label by label: the canonical host equals the pattern's name, or (wildcard) ends
// in all of its labels with at least one more before them; and the port agrees.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"example.com", "example.com"}, {"*.example.com", "a.example.com"},
		{"*.example.com", "evilexample.com"}, {"example.com:443", "EXAMPLE.com."}, {"*.a.b", "x.a.b\x00.c"}} {
		f.Add(s[0], s[1], uint16(443))
	}
	f.Fuzz(func(t *testing.T, pattern, host string, port uint16) {
		p, err := ParsePattern(pattern)
		if err != nil {
			return
		}
		h, err := CanonicalHost(host)
		if err != nil {
			return // the proxy refuses such a host before any match
		}
		hl, pl := strings.Split(h, "."), strings.Split(p.Host, ".")
		suffix := len(hl) >= len(pl) && strings.Join(hl[len(hl)-len(pl):], ".") == p.Host
		want := (p.Port == 0 || p.Port == port) && suffix && (p.Wildcard == (len(hl) > len(pl)))
		if got := p.Match(h, port); got != want {
			t.Fatalf("%s.Match(%q→%q, %d) = %v; the rule says %v", p, host, h, port, got, want)
		}
	})
}

// FuzzParseIPLiteral: no input makes it panic, and it agrees with netip on every
// address netip parses.
func FuzzParseIPLiteral(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "0x7f.1", "2130706433", "0177.0.0.1", "::ffff:1.2.3.4", "[::1]", "fe80::1%eth0", "1.2.3.4.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseIPLiteral(s)
		if want, err := netip.ParseAddr(s); err == nil && (!ok || a != want) {
			t.Fatalf("ParseIPLiteral(%q) = %s, %v; netip says %s", s, a, ok, want)
		}
	})
}
