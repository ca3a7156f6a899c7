package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestWithin: a tenant's policy stays inside the operator's bound, entry by entry;
// what lies outside is named. Regression guard for a bound read as a prefix of
// strings ("*.example.com" must not cover "evilexample.com") or a pin used to send
// an allowed name to any address.
func TestWithin(t *testing.T) {
	bound := Policy{
		Allow:        []string{"*.example.com", "registry.test:443", "preset:npm"},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")},
	}
	pin := func(name, addr string) map[string]netip.Addr {
		return map[string]netip.Addr{name: netip.MustParseAddr(addr)}
	}
	for _, p := range []Policy{
		{},
		{Allow: []string{"a.example.com", "*.b.example.com", "*.example.com", "A.Example.COM.:8443"}},
		{Allow: []string{"registry.test:443", "registry.npmjs.org:443", "preset:npm"}},
		{Allow: []string{"a.example.com"}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24"), netip.MustParsePrefix("10.1.0.0/16")},
			DNSOverride: pin("a.example.com", "10.1.2.3")},
	} {
		if err := p.Within(bound); err != nil {
			t.Errorf("%+v: %v, want within", p, err)
		}
	}
	for name, tc := range map[string]struct {
		p    Policy
		want string
	}{
		"the suffix itself":  {Policy{Allow: []string{"example.com"}}, "example.com"},
		"string suffix":      {Policy{Allow: []string{"evilexample.com"}}, "evilexample.com"},
		"other host":         {Policy{Allow: []string{"other.test"}}, "other.test"},
		"any port":           {Policy{Allow: []string{"registry.test"}}, "registry.test"},
		"other port":         {Policy{Allow: []string{"registry.test:80"}}, "registry.test:80"},
		"preset outside":     {Policy{Allow: []string{"preset:pypi"}}, "pypi.org"},
		"wider prefix":       {Policy{Allow: []string{"a.example.com"}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "10.0.0.0/8"},
		"other prefix":       {Policy{Allow: []string{"a.example.com"}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}}, "192.168.0.0/16"},
		"pin to public":      {Policy{Allow: []string{"a.example.com"}, DNSOverride: pin("a.example.com", "203.0.113.9")}, "dns_override"},
		"pin outside prefix": {Policy{Allow: []string{"a.example.com"}, DNSOverride: pin("a.example.com", "10.2.0.1")}, "dns_override"},
		"invalid":            {Policy{Allow: []string{"*.com"}}, "public suffix"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.p.Within(bound)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want an error naming %q", tc.p, err, tc.want)
			}
		})
	}
	if err := (Policy{}).Within(Policy{Allow: []string{"*"}}); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Errorf("an invalid bound: %v", err)
	}
}
