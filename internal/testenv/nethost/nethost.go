// Package nethost gives a test hosts of its own to reach over a real network: each
// Host is a fresh network namespace joined to the test's by a veth pair, with a /30
// of its own from 198.18.0.0/15 (the range RFC 2544 sets aside for benchmarking, so
// never a real destination), and Origin serves HTTP and HTTPS (a test CA) there and
// records what it received.
//
// A namespace lives on one OS thread that the Host keeps locked for its life; it
// holds no name in /run/netns, so a killed test leaves nothing behind: the
// namespace, and with it the veth pair, goes with the last socket. Names and
// addresses are random, so parallel test runs on one machine do not collide. It
// needs root (testenv.RequireRoot) and iproute2; it does not route, NAT or resolve:
// tests reach hosts by address (the proxy by a pinned name).
package nethost

import (
	"net"
	"net/netip"
	"strconv"
)

// Host is a network namespace with one address.
type Host struct {
	Addr   netip.Addr   // the host's address, in its namespace
	Peer   netip.Addr   // the test's end of the veth pair
	Prefix netip.Prefix // the /30 both are in
	ifname string       // the test's end of the pair
	calls  chan func()
}

// Do runs fn on the namespace's thread: sockets it opens live in the namespace.
func (h *Host) Do(fn func()) {
	done := make(chan struct{})
	h.calls <- func() { defer close(done); fn() }
	<-done
}

// Listen opens a TCP listener on the host's address inside its namespace; port 0
// picks one.
func (h *Host) Listen(port int) (net.Listener, error) {
	var l net.Listener
	var err error
	h.Do(func() { l, err = net.Listen("tcp", net.JoinHostPort(h.Addr.String(), strconv.Itoa(port))) })
	return l, err
}
