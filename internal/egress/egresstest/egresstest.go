// Package egresstest holds what tests of egress's users share.
package egresstest

import (
	"net"
	"net/netip"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
)

// ReservedPrefixes returns the special-purpose addresses (egress.CheckAddr, the
// loopback aside) that host resolves to here, each as a prefix of its own: a
// test machine may reach a registry or Debian's archive through a mirror or TLS
// interceptor on such an address, which a test then opens to its sandbox as an
// operator would (an allowed private prefix).
func ReservedPrefixes(t *testing.T, host string) []netip.Prefix {
	t.Helper()
	addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", host)
	if err != nil {
		t.Fatalf("resolve %s: %v", host, err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if a = a.Unmap(); egress.CheckAddr(a, nil) != nil && !a.IsLoopback() {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out
}
