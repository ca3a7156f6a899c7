package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// egressServer receives the listener a sandbox's init opened in its network
// namespace (nsinit.Network) and serves the sandbox's proxy on it.
type egressServer struct {
	n    *Network
	conn *net.UnixConn // the host end of the init's egress socket
	done chan struct{}

	mu     sync.Mutex
	l      net.Listener
	closed bool
}

// newEgress makes the socket the init sends its listener on, passes the init's end
// through add, and returns the init's part of the Spec.
func newEgress(n *Network, add func(*os.File) int) (*egressServer, *nsinit.Network, error) {
	if n.Proxy == nil {
		return nil, nil, errors.New("sandbox: Network without a Proxy")
	}
	port := n.Port
	if port == 0 {
		port = DefaultProxyPort
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress socket: %w", err)
	}
	host := os.NewFile(uintptr(fds[0]), "egress socket")
	initEnd := os.NewFile(uintptr(fds[1]), "egress socket (init)")
	c, err := net.FileConn(host)
	host.Close()
	if err != nil {
		initEnd.Close()
		return nil, nil, fmt.Errorf("egress socket: %w", err)
	}
	e := &egressServer{n: n, conn: c.(*net.UnixConn), done: make(chan struct{})}
	spec := &nsinit.Network{
		Addr:   fmt.Sprintf("127.0.0.1:%d", port),
		Socket: add(initEnd),
		CACert: string(append(append(n.Proxy.CACertPEM(), '\n'), n.Trust...)),
	}
	go e.serve()
	return e, spec, nil
}

// serve waits for the init's listener and serves the proxy on it until close.
// Without one (the init failed before, or died), it returns: the sandbox's setup
// failed, and its command never runs.
func (e *egressServer) serve() {
	defer close(e.done)
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, flags, _, err := e.conn.ReadMsgUnix(buf, oob)
	e.conn.Close()
	var fds []int
	if oobn > 0 {
		fds = rights(oob[:oobn])
	}
	if err != nil || len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
		closeFDs(fds)
		return
	}
	f := os.NewFile(uintptr(fds[0]), "egress listener")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		l.Close()
		return
	}
	e.l = l
	e.mu.Unlock()
	// Serve returns once l or the proxy is closed, or on an accept error it cannot
	// wait out: then l is closed too, so the port refuses rather than queues.
	_ = e.n.Proxy.Serve(l)
	l.Close()
}

// close stops serving: the listener is closed, so a connection to the port is
// refused from now on, whatever the proxy does. Connections already accepted are
// the proxy's (they end with the sandbox's sockets, or with Proxy.Close).
func (e *egressServer) close() {
	e.mu.Lock()
	e.closed = true
	l := e.l
	e.mu.Unlock()
	e.conn.Close()
	if l != nil {
		l.Close()
	}
	<-e.done
}
