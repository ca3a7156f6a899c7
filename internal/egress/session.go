package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"time"
)

// maxHead bounds a request head (request line and headers).
const maxHead = 64 << 10

// session is one client connection: a CONNECT tunnel, or plain HTTP requests one
// after the other.
type session struct {
	p      *Proxy
	client net.Conn

	kept *keptUp // plain HTTP: the last request's upstream, for the next one

	mu     sync.Mutex
	dest   *dest  // the upstream connection now open, if any
	reason Reason // why the proxy cut the connection, if it did
}

// dest is where an upstream connection goes; recheck holds it against a new policy.
type dest struct {
	host string
	port uint16
	addr netip.Addr
	up   net.Conn
	e2e  bool // an end-to-end tunnel: cut when the policy starts to Scan
}

func (s *session) serve() {
	defer s.client.Close()
	defer func() {
		if v := recover(); v != nil {
			// A bug must not take the proxy down with it, nor say anything about what
			// it was handling: the runtime's own message, or nothing.
			detail := "panic"
			if re, ok := v.(runtime.Error); ok {
				detail = re.Error()
			}
			s.p.log.add(Event{Time: time.Now(), Decision: Denied, Reason: ReasonInternal, Detail: detail})
		}
	}()
	r := s.p.rules.Load()
	if n := s.p.conns.Add(1); n > int64(r.maxConns) {
		s.p.conns.Add(-1)
		s.p.log.add(Event{Time: time.Now(), Decision: Denied, Reason: ReasonConnLimit,
			Detail: fmt.Sprintf("%d connections open (limit %d)", n-1, r.maxConns)})
		writeRefusal(s.client, ReasonConnLimit, "too many connections")
		return
	}
	defer s.p.conns.Add(-1)
	defer s.dropKept()
	br := bufio.NewReaderSize(s.client, maxHead)
	for {
		s.client.SetReadDeadline(time.Now().Add(s.p.cfg.IdleTimeout))
		if _, err := br.Peek(1); err != nil {
			return
		}
		start := time.Now()
		s.client.SetReadDeadline(start.Add(s.p.cfg.HandshakeTimeout))
		req, hosts, err := readRequest(br)
		if err != nil {
			s.p.log.add(Event{Time: start, Decision: Denied, Reason: ReasonBadRequest, Detail: clip(err.Error())})
			writeRefusal(s.client, ReasonBadRequest, "malformed request")
			return
		}
		s.client.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			s.connect(start, req, hosts, br)
			return
		}
		if !s.plain(start, req, hosts) {
			return
		}
	}
}

// attach makes up the session's upstream connection, metered and cut by policy
// changes and limits; detach ends that.
func (s *session) attach(ev *Event, host string, port uint16, up net.Conn) *meteredConn {
	m := &meteredConn{Conn: up, s: s, ev: ev}
	s.mu.Lock()
	s.dest = &dest{host: host, port: port, addr: ev.Addr, up: up}
	cut := s.reason
	s.mu.Unlock()
	if cut != "" {
		up.Close()
	}
	return m
}

// endToEnd marks the upstream connection an end-to-end tunnel and reports whether
// the policy now in force still lets it be one (it does not Scan); marked first,
// so a SetPolicy that starts scanning either is seen here or cuts it.
func (s *session) endToEnd() bool {
	s.mu.Lock()
	if s.dest != nil {
		s.dest.e2e = true
	}
	s.mu.Unlock()
	return !s.p.rules.Load().scan.on
}

func (s *session) detach() {
	s.mu.Lock()
	s.dest = nil
	s.mu.Unlock()
}

// cut ends the connection on the proxy's initiative, recording why.
func (s *session) cut(reason Reason) {
	s.mu.Lock()
	if s.reason == "" {
		s.reason = reason
	}
	d := s.dest
	s.mu.Unlock()
	s.client.Close()
	if d != nil {
		d.up.Close()
	}
}

// cutReason is why the proxy cut the connection, or "".
func (s *session) cutReason() Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// recheck cuts the connection if r no longer allows where it goes.
func (s *session) recheck(r *rules) {
	s.mu.Lock()
	d := s.dest
	s.mu.Unlock()
	if d == nil {
		return
	}
	pinned, ok := r.override[d.host]
	if !r.allowed(d.host, d.port) || CheckAddr(d.addr, r.private) != nil || ok && pinned != d.addr || d.e2e && r.scan.on {
		s.cut(ReasonPolicyChanged)
	}
}

// finish completes ev for a connection that was allowed and logs it.
func (s *session) finish(ev *Event) {
	ev.Decision = Allowed
	ev.Duration = time.Since(ev.Time)
	if r := s.cutReason(); r != "" && ev.Reason == "" {
		ev.Reason = r
	}
	s.p.log.add(*ev)
}

// refuse logs ev as refused and tells the client why.
func (s *session) refuse(w io.Writer, ev *Event, reason Reason, detail string) {
	ev.Decision, ev.Reason, ev.Detail = Denied, reason, detail
	ev.Duration = time.Since(ev.Time)
	s.p.log.add(*ev)
	if w != nil {
		writeRefusal(w, reason, detail)
	}
}
