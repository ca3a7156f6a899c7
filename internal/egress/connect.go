package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// connect serves a CONNECT request: check the target, connect, answer 200, then
// require a TLS ClientHello whose server name is the CONNECT host before a byte goes
// upstream. A tunnel to a host a secret is for is intercepted, and every tunnel
// while the policy scans (Scan); every other one is end to end. Tunnels carry TLS only, on every port: plain HTTP goes through the
// proxy as absolute-URI requests, where each request's host is checked.
func (s *session) connect(start time.Time, req *http.Request, hosts []string, br *bufio.Reader) {
	ev := Event{Time: start, Proto: "connect"}
	host, port, reason, detail := target(req.URL.Host, 0)
	ev.Host, ev.Port = host, port
	if reason == "" && (req.URL.User != nil || req.URL.Host == "") {
		reason, detail = ReasonBadRequest, "CONNECT wants host:port"
	}
	if reason == "" {
		reason, detail = agree(hosts, host, port, port, false)
	}
	if reason != "" {
		s.refuse(s.client, &ev, reason, detail)
		return
	}
	r := s.p.rules.Load()
	raw, reason, detail := s.open(r, &ev, host, port)
	if reason != "" {
		s.refuse(s.client, &ev, reason, detail)
		return
	}
	up := s.attach(&ev, host, port, raw)
	defer s.detach()
	defer up.Close()
	if _, err := io.WriteString(s.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		s.finish(&ev)
		return
	}
	s.client.SetReadDeadline(time.Now().Add(s.p.cfg.HandshakeTimeout))
	sni, hello, err := readClientHello(br)
	s.client.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		s.refuse(nil, &ev, ReasonNotTLS, clip(err.Error()))
		return
	case sni == "":
		s.refuse(nil, &ev, ReasonNoSNI, "the ClientHello names no server")
		return
	}
	if name, err := CanonicalHost(sni); err != nil || name != host {
		s.refuse(nil, &ev, ReasonSNIMismatch, fmt.Sprintf("ClientHello names %s, CONNECT %s", quoteHost(sni), host))
		return
	}
	r = s.p.rules.Load()
	if match, _ := r.secretsFor(host, port); len(match) > 0 || r.scan.on {
		ev.Intercepted = true
		s.intercept(&ev, host, port, &prefixConn{Conn: s.client, r: io.MultiReader(bytes.NewReader(hello), br)}, up)
		return
	}
	if !s.endToEnd() {
		s.refuse(nil, &ev, ReasonPolicyChanged, "the policy began to scan")
		return
	}
	if _, err := up.Write(hello); err == nil {
		splice(s.client, br, up)
	}
	s.finish(&ev)
}

// splice copies both ways until the destination is done: the client's end of input
// is passed on as a half-close, the destination's ends the tunnel.
func splice(client net.Conn, fromClient io.Reader, up net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(up, fromClient); err == nil {
			closeWrite(up)
		} else {
			up.Close()
		}
	}()
	io.Copy(client, up)
	client.Close()
	up.Close()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// prefixConn reads from r (bytes already read from the client, then the rest) and
// writes to the client.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }
