package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// intercept terminates the sandbox's TLS with a certificate from the sandbox's CA,
// opens TLS to the destination (verified against the configured roots, with the
// CONNECT host as the name), and relays HTTP/1.1 requests one at a time. Every
// request must name the CONNECT host; the placeholders of the secrets for this host
// are replaced in its headers; a placeholder of any other secret anywhere in it
// stops it, as does a secret Scan finds (read before the secrets are injected).
func (s *session) intercept(ev *Event, host string, port uint16, client net.Conn, up net.Conn) {
	deadline := time.Now().Add(s.p.cfg.HandshakeTimeout)
	upTLS := tls.Client(up, &tls.Config{
		ServerName: host,
		RootCAs:    s.p.cfg.UpstreamRoots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	up.SetDeadline(deadline)
	if err := upTLS.Handshake(); err != nil {
		s.refuse(nil, ev, ReasonUpstreamTLS, clip(err.Error()))
		return
	}
	up.SetDeadline(time.Time{})
	leaf, err := s.p.ca.leaf(host)
	if err != nil {
		s.refuse(nil, ev, ReasonInternal, "minting a certificate: "+clip(err.Error()))
		return
	}
	cTLS := tls.Server(client, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	s.client.SetDeadline(deadline)
	if err := cTLS.Handshake(); err != nil {
		// The sandbox does not trust its CA, or gave up: nothing was sent upstream.
		ev.Detail = "client handshake: " + clip(err.Error())
		s.finish(ev)
		return
	}
	s.client.SetDeadline(time.Time{})
	cr, ur := bufio.NewReaderSize(cTLS, maxHead), bufio.NewReader(upTLS)
	for {
		s.client.SetReadDeadline(time.Now().Add(s.p.cfg.IdleTimeout))
		if _, err := cr.Peek(1); err != nil {
			break
		}
		s.client.SetReadDeadline(time.Now().Add(s.p.cfg.HandshakeTimeout))
		req, hosts, err := readRequest(cr)
		s.client.SetReadDeadline(time.Time{})
		if err != nil {
			s.refuse(cTLS, ev, ReasonBadRequest, clip(err.Error()))
			return
		}
		if reason, detail := s.checkIntercepted(req, hosts, host, port); reason != "" {
			req.Body.Close()
			s.refuse(cTLS, ev, reason, detail)
			return
		}
		r := s.p.rules.Load()
		if r.scan.on {
			if reason, detail := r.scan.scanRequest(req); reason != "" {
				req.Body.Close()
				s.refuse(cTLS, ev, reason, detail+" toward "+host)
				return
			}
		}
		match, other := r.secretsFor(host, port)
		inject(req.Header, match)
		keep, upKeep, err := exchange(req, upTLS, ur, cTLS, other)
		req.Body.Close()
		var pe *placeholderError
		if errors.As(err, &pe) {
			s.refuse(cTLS, ev, ReasonSecretElsewhere, "placeholder of secret "+pe.name+" in the body toward "+host)
			return
		}
		if err != nil || !keep || !upKeep {
			break
		}
	}
	s.finish(ev)
}

// checkIntercepted holds one request inside an intercepted tunnel to the tunnel's
// host, under the policy now in force, and refuses the placeholders of secrets that
// are not for that host.
func (s *session) checkIntercepted(req *http.Request, hosts []string, host string, port uint16) (Reason, string) {
	if req.URL.Host != "" {
		h, p, reason, _ := target(req.URL.Host, 443)
		if reason != "" || req.URL.Scheme != "https" || h != host || p != port {
			return ReasonHostMismatch, fmt.Sprintf("request for %s inside the tunnel to %s:%d", quoteHost(req.URL.Host), host, port)
		}
	}
	if reason, detail := agree(hosts, host, port, 443, true); reason != "" {
		return reason, detail
	}
	r := s.p.rules.Load()
	if r.err != nil {
		return ReasonPolicyInvalid, clip(r.err.Error())
	}
	if !r.allowed(host, port) {
		return ReasonNotAllowed, fmt.Sprintf("%s:%d is not in the allowlist", host, port)
	}
	_, other := r.secretsFor(host, port)
	if sr, where, ok := findPlaceholder(req, other); ok {
		return ReasonSecretElsewhere, "placeholder of secret " + sr.name + " in the " + where + " toward " + host
	}
	return "", ""
}
