package attack

import (
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// listeners are the host's doors the sandbox must not reach: TCP and UDP on loopback
// (IPv4 and IPv6) and on the host's other addresses, an abstract Unix socket, and a
// Unix socket file (a Docker-style API socket) outside the workspace.
type listeners struct {
	tcp      []string // host:port to try
	udp      []string // host:port to try
	abstract string
	sockPath string
	wsSock   string // a socket file planted inside the workspace

	mu  sync.Mutex
	got []string // what reached any of them
	cls []func()
}

func openListeners(t *testing.T, fx *fixture) *listeners {
	t.Helper()
	l := &listeners{abstract: "agentbox-test-" + randHex(8), sockPath: filepath.Join(fx.dir, "docker.sock"), wsSock: filepath.Join(fx.ws, "agent.sock")}
	record := func(what string) {
		l.mu.Lock()
		l.got = append(l.got, what)
		l.mu.Unlock()
	}
	serve := func(ln net.Listener, what string) {
		l.cls = append(l.cls, func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				record(what + " accepted a connection from " + c.RemoteAddr().String())
				c.Close()
			}
		}()
	}
	addrs := []string{"127.0.0.1", "::1"}
	ifaddrs, _ := net.InterfaceAddrs()
	for _, a := range ifaddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			addrs = append(addrs, p.Addr().String())
		}
	}
	for _, a := range addrs {
		ap := netip.AddrPortFrom(netip.MustParseAddr(a), 0)
		if ln, err := net.Listen("tcp", ap.String()); err == nil {
			serve(ln, "tcp "+ln.Addr().String())
			l.tcp = append(l.tcp, ln.Addr().String())
		}
		if pc, err := net.ListenPacket("udp", ap.String()); err == nil {
			l.cls = append(l.cls, func() { pc.Close() })
			l.udp = append(l.udp, pc.LocalAddr().String())
			go func() {
				buf := make([]byte, 512)
				for {
					n, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					record("udp " + pc.LocalAddr().String() + " received " + string(buf[:n]) + " from " + from.String())
				}
			}()
		}
	}
	for _, p := range []string{"@" + l.abstract, l.sockPath, l.wsSock} {
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		serve(ln, "unix "+p)
	}
	t.Cleanup(l.close)
	return l
}

func (l *listeners) close() {
	for _, c := range l.cls {
		c()
	}
}

// reached returns what reached a listener, after giving late packets 200 ms.
func (l *listeners) reached() []string {
	time.Sleep(200 * time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// specs are the attacker's net arguments for these listeners.
func (l *listeners) specs(fx *fixture, wsSock string) []string {
	s := []string{"ifaces", "icmp-raw", "icmp6-raw", "icmp-dgram", "packet", "netlink", "vsock",
		"abstract:" + l.abstract, "unix:" + l.sockPath, "unix:/run/docker.sock", "unix:/var/run/docker.sock", "unix:" + wsSock}
	for _, a := range l.tcp {
		s = append(s, "tcp:"+a)
	}
	for _, a := range l.udp {
		s = append(s, "udp:"+a+":"+fx.tag)
	}
	return s
}

// TestEscape_NetworkReachesHost (ANCHORS vector 15): with the proxy variables unset,
// raw sockets try the host's loopback listeners (TCP, UDP, IPv4, IPv6), its other
// addresses, ICMP and packet sockets, netlink, vsock (where this VM's own control
// channel lives), a host abstract Unix socket, and Docker-style Unix socket files:
// outside the workspace and planted inside it. Stopped by the network namespace
// (only its own loopback), the socket-family deny rule (EAFNOSUPPORT), the missing
// CAP_NET_RAW, the abstract socket namespace being per network namespace, and the
// overlay, whose inodes are not the host socket's. With --write the workspace shows
// the host's own inodes, so a pathname socket there is the host daemon's: there the
// sandbox gets no Unix sockets below Landlock ABI 9 (seccomp: EPERM for socket and
// datagram socketpair), and from ABI 9 Landlock refuses sockets bound outside it
// (EACCES).
func TestEscape_NetworkReachesHost(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		l := openListeners(t, fx)
		at := fx.direct(0, nil, append([]string{"net"}, l.specs(fx, l.wsSock)...)...)
		at.mustSucceed(t, "control: the host's doors are open without a sandbox",
			"tcp:"+l.tcp[0], "abstract:"+l.abstract, "unix:"+l.sockPath, "netlink", "packet", "vsock")
		if len(l.reached()) == 0 {
			t.Errorf("control: no listener saw the attacker")
		}
	})
	for _, write := range []bool{false, true} {
		name := "sandbox-overlay"
		var flags []string
		if write {
			name, flags = "sandbox-write-bind", []string{"--write"}
		}
		t.Run(name, func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			fx.wsWritable = write
			l := openListeners(t, fx)
			r := fx.run(boxOpts{flags: flags, cmd: fx.attack("net", l.specs(fx, "/workspace/agent.sock")...)})
			r.at.mustBeDone(t, "net")
			if at, ok := r.at.get(t, "ifaces"); ok && at.ok {
				for _, i := range strings.Fields(at.detail) {
					if i != "lo" {
						t.Errorf("ESCAPE network: interface %q in the sandbox (want only lo)", i)
					}
				}
			}
			var attempts []string
			for _, n := range r.at.withPrefix("") {
				if n != "ifaces" && !strings.HasPrefix(n, "udp:") {
					attempts = append(attempts, n)
				}
			}
			r.at.mustFail(t, "reach the host's network", attempts...)
			r.at.mustFailWith(t, "socket family deny-list", []string{"EAFNOSUPPORT"}, "packet", "netlink", "vsock")
			if write {
				r.at.mustFailWith(t, "Unix socket rule of the read-write workspace", []string{"EPERM", "EACCES"}, "unix:/workspace/agent.sock")
			}
			for _, got := range l.reached() {
				t.Errorf("ESCAPE network: %s", got)
			}
			fx.verifyHost(r)
		})
	}
}

// TestEscape_LoopbackTCPStaysInside (ANCHORS vector 15; issue 10, item 6): test
// suites start servers on 127.0.0.1 and connect to them, which the sandbox refused
// (Landlock denied every TCP bind and connect). Its network namespace has a
// loopback of its own, so that is allowed now, and the host's loopback must stay
// out of reach: a server and its client on 127.0.0.1 and ::1 work inside; connects
// to the host's loopback listeners fail, and none of them sees a connection; the
// sandbox can even listen on the host listeners' very ports (a stack of its own).
// Stopped by the network namespace, not by Landlock, also with --write.
func TestEscape_LoopbackTCPStaysInside(t *testing.T) {
	t.Parallel()
	specs := func(l *listeners) (loop, reach, bind []string) {
		loop = []string{"tcp-loop:127.0.0.1", "tcp-loop:::1"}
		for _, a := range l.tcp {
			if ap := netip.MustParseAddrPort(a); ap.Addr().IsLoopback() {
				reach = append(reach, "tcp:"+a)
				bind = append(bind, "tcp-bind:"+a)
			}
		}
		return loop, reach, bind
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		l := openListeners(t, fx)
		loop, reach, bind := specs(l)
		if len(reach) < 2 {
			t.Fatalf("the host has no loopback listeners for IPv4 and IPv6: %v", l.tcp)
		}
		at := fx.direct(0, nil, append(append(append([]string{"net"}, loop...), reach...), bind...)...)
		at.mustSucceed(t, "control: on the host, the host's loopback is reachable", append(loop, reach...)...)
		at.mustFailWith(t, "control: the host listeners hold their ports", []string{"EADDRINUSE"}, bind...)
		if len(l.reached()) == 0 {
			t.Errorf("control: no listener saw the attacker")
		}
	})
	for _, write := range []bool{false, true} {
		name := "sandbox-overlay"
		var flags []string
		if write {
			name, flags = "sandbox-write-bind", []string{"--write"}
		}
		t.Run(name, func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			fx.wsWritable = write
			l := openListeners(t, fx)
			loop, reach, bind := specs(l)
			r := fx.run(boxOpts{flags: flags, cmd: fx.attack("net", append(append(loop, reach...), bind...)...)})
			r.at.mustBeDone(t, "net")
			r.at.mustSucceed(t, "a server and its client on the sandbox's own loopback", loop...)
			r.at.mustFailWith(t, "reach the host's loopback", []string{"ECONNREFUSED"}, reach...)
			r.at.mustSucceed(t, "the sandbox's loopback is its own: the host's ports are free there", bind...)
			for _, got := range l.reached() {
				t.Errorf("ESCAPE network: %s", got)
			}
			fx.verifyHost(r)
		})
	}
}
