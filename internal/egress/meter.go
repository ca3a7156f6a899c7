package egress

import (
	"errors"
	"net"
	"sync/atomic"
)

var errByteLimit = errors.New("egress: byte limit reached")

// meteredConn is an upstream connection that counts what it carries into its event
// and the proxy's total, and stops at Limits.MaxBytes: it carries exactly up to the
// limit, then cuts the session.
type meteredConn struct {
	net.Conn
	s  *session
	ev *Event
}

// take reserves up to n bytes of the proxy's allowance and returns how many.
func (m *meteredConn) take(n int) int {
	limit := m.s.p.rules.Load().maxBytes
	if limit <= 0 {
		m.s.p.bytes.Add(int64(n))
		return n
	}
	for {
		used := m.s.p.bytes.Load()
		grant := min(int64(n), limit-used)
		if grant <= 0 {
			return 0
		}
		if m.s.p.bytes.CompareAndSwap(used, used+grant) {
			return int(grant)
		}
	}
}

func (m *meteredConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	grant := m.take(len(b))
	if grant == 0 {
		m.s.cut(ReasonByteLimit)
		return 0, errByteLimit
	}
	n, err := m.Conn.Read(b[:grant])
	m.s.p.bytes.Add(int64(n - grant)) // give back what was not read
	atomic.AddInt64(&m.ev.BytesDown, int64(n))
	return n, err
}

func (m *meteredConn) Write(b []byte) (int, error) {
	grant := m.take(len(b))
	n, err := m.Conn.Write(b[:grant])
	m.s.p.bytes.Add(int64(n - grant))
	atomic.AddInt64(&m.ev.BytesUp, int64(n))
	if err == nil && grant < len(b) {
		m.s.cut(ReasonByteLimit)
		err = errByteLimit
	}
	return n, err
}

// CloseWrite half-closes a TCP upstream, so a tunnel's client can finish sending
// and still read the answer.
func (m *meteredConn) CloseWrite() error {
	if cw, ok := m.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return m.Conn.Close()
}
