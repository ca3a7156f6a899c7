package main

import (
	"bufio"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func init() { register("net", network) }

// network tries to reach the host and the outside world with the proxy variables
// unset: every attempt opens its socket with raw system calls, so nothing in between
// can route it through a proxy.
//
//	net SPEC...
//
//	ifaces              the interfaces of this network namespace (/proc/net/dev)
//	tcp:ADDR:PORT       connect (2 s); ADDR may be IPv6 in brackets
//	udp:ADDR:PORT:TEXT  sendto once (the test checks that its listener got nothing)
//	icmp-raw, icmp6-raw, icmp-dgram, packet, netlink, vsock
//	                    create the socket (vsock is never connected: the VM's own
//	                    control channel lives there)
//	abstract:NAME       connect to the abstract Unix socket @NAME
//	unix:PATH           connect to a Unix socket file
//	tcp-loop:ADDR       a server and its client: listen on ADDR (127.0.0.1 or ::1)
//	                    port 0, connect to it, and pass a line through
//	tcp-bind:ADDR:PORT  bind and listen on that very address: free in a network
//	                    namespace of its own even where the host listens on it
func network(args []string) {
	for _, spec := range args {
		kind, rest, _ := strings.Cut(spec, ":")
		name := spec
		if kind == "udp" {
			name = spec[:strings.LastIndexByte(spec, ':')]
		}
		switch kind {
		case "ifaces":
			names, err := interfaces()
			report(name, err, "%s", strings.Join(names, " "))
		case "tcp":
			report(name, tcpConnect(rest), "connected to %s", rest)
		case "udp":
			i := strings.LastIndexByte(rest, ':')
			report(name, udpSend(rest[:i], rest[i+1:]), "datagram sent to %s", rest[:i])
		case "icmp-raw":
			report(name, socketOnly(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), "raw ICMP socket")
		case "icmp6-raw":
			report(name, socketOnly(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6), "raw ICMPv6 socket")
		case "icmp-dgram":
			report(name, socketOnly(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), "ping socket")
		case "packet":
			report(name, socketOnly(unix.AF_PACKET, unix.SOCK_RAW, 0x300), "packet socket")
		case "netlink":
			report(name, socketOnly(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), "netlink socket")
		case "vsock":
			report(name, socketOnly(unix.AF_VSOCK, unix.SOCK_STREAM, 0), "vsock socket")
		case "abstract":
			report(name, unixConnect("@"+rest), "connected to @%s", rest)
		case "unix":
			report(name, unixConnect(rest), "connected to %s", rest)
		case "tcp-loop":
			port, err := tcpLoop(rest)
			report(name, err, "a line went through %s port %d", rest, port)
		case "tcp-bind":
			report(name, tcpBind(rest), "listening on %s", rest)
		default:
			usage()
		}
	}
}

func interfaces() ([]string, error) {
	f, err := os.Open("/proc/net/dev")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n, _, found := strings.Cut(sc.Text(), ":"); found {
			names = append(names, strings.TrimSpace(n))
		}
	}
	return names, sc.Err()
}

func socketOnly(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func sockaddr(hostport string) (unix.Sockaddr, int, error) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return nil, 0, err
	}
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, unix.AF_INET, nil
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, unix.AF_INET6, nil
}

// tcpConnect connects with a 2 s limit (non-blocking connect, then poll).
func tcpConnect(hostport string) error {
	sa, family, err := sockaddr(hostport)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	err = unix.Connect(fd, sa)
	if err != unix.EINPROGRESS {
		return err
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(pfd, int((2 * time.Second).Milliseconds()))
	if err != nil {
		return err
	}
	if n == 0 {
		return unix.ETIMEDOUT
	}
	soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if soerr != 0 {
		return unix.Errno(soerr)
	}
	unix.Write(fd, []byte("agentbox-attack tcp\n"))
	return nil
}

func udpSend(hostport, text string) error {
	sa, family, err := sockaddr(hostport)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Sendto(fd, []byte(text), 0, sa)
}

func unixConnect(path string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return err
	}
	unix.Write(fd, []byte("agentbox-attack unix\n"))
	return nil
}

// tcpLoop listens on addr port 0, connects to the listener and passes a line from
// the client to the server. It returns the port.
func tcpLoop(addr string) (int, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return 0, err
	}
	sa, family, _ := sockaddr(netip.AddrPortFrom(ip, 0).String())
	ln, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, sa); err != nil {
		return 0, err
	}
	if err := unix.Listen(ln, 1); err != nil {
		return 0, err
	}
	got, err := unix.Getsockname(ln)
	if err != nil {
		return 0, err
	}
	port := 0
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		port = a.Port
	case *unix.SockaddrInet6:
		port = a.Port
	}
	c, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return port, err
	}
	defer unix.Close(c)
	if err := unix.Connect(c, got); err != nil {
		return port, err
	}
	s, _, err := unix.Accept(ln)
	if err != nil {
		return port, err
	}
	defer unix.Close(s)
	line := []byte("agentbox-attack loopback\n")
	if _, err := unix.Write(c, line); err != nil {
		return port, err
	}
	buf := make([]byte, len(line))
	n, err := unix.Read(s, buf)
	if err != nil {
		return port, err
	}
	if string(buf[:n]) != string(line) {
		return port, unix.EPROTO
	}
	return port, nil
}

// tcpBind binds and listens on hostport, then closes.
func tcpBind(hostport string) error {
	sa, family, err := sockaddr(hostport)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, sa); err != nil {
		return err
	}
	return unix.Listen(fd, 1)
}
