package egress

import (
	"bufio"
	"errors"
	"net/http"
	"net/netip"
	"time"
)

// plain serves one absolute-URI HTTP request. It reports whether the client
// connection may carry another request.
func (s *session) plain(start time.Time, req *http.Request, hosts []string) bool {
	ev := Event{Time: start, Proto: "http"}
	defer req.Body.Close()
	if req.URL.Scheme != "http" || req.URL.Host == "" || req.URL.User != nil {
		ev.Host = quoteHost(req.URL.Host)
		s.refuse(s.client, &ev, ReasonBadRequest, "this is a proxy: send an absolute http:// URI without userinfo, or CONNECT for https")
		return false
	}
	host, port, reason, detail := target(req.URL.Host, 80)
	ev.Host, ev.Port = host, port
	if reason == "" {
		reason, detail = agree(hosts, host, port, 80, true)
	}
	r := s.p.rules.Load()
	if reason == "" {
		// No secret goes over plain HTTP, to its own host or any other.
		if sr, where, ok := findPlaceholder(req, r.secrets); ok {
			reason, detail = ReasonSecretElsewhere, "placeholder of secret "+sr.name+" in the "+where+" toward "+host
			if match, _ := r.secretsFor(host, port); containsSecret(match, sr) {
				reason, detail = ReasonSecretPlainHTTP, "secret "+sr.name+" is injected over https only"
			}
		}
	}
	if reason == "" && r.scan.on {
		if reason, detail = r.scan.scanRequest(req); reason != "" {
			detail += " toward " + host
		}
	}
	if reason != "" {
		s.refuse(s.client, &ev, reason, detail)
		return false
	}
	up, br := s.reuse(r, &ev, host, port)
	if up == nil {
		s.dropKept()
		raw, reason, detail := s.open(r, &ev, host, port)
		if reason != "" {
			s.refuse(s.client, &ev, reason, detail)
			return false
		}
		up = s.attach(&ev, host, port, raw)
		br = bufio.NewReader(up)
		s.kept = &keptUp{host: host, port: port, addr: ev.Addr, m: up, br: br}
	}
	keep, upKeep, err := exchange(req, up, br, s.client, r.secrets)
	if err != nil || !upKeep {
		s.dropKept()
	}
	var pe *placeholderError
	if errors.As(err, &pe) {
		s.refuse(s.client, &ev, ReasonSecretElsewhere, "placeholder of secret "+pe.name+" in the body toward "+host)
		return false
	}
	s.finish(&ev)
	return keep && err == nil && s.cutReason() == ""
}

// keptUp is a plain HTTP upstream connection kept for the client connection's next
// request to the same host and port (apt and pip send many in a row).
type keptUp struct {
	host string
	port uint16
	addr netip.Addr
	m    *meteredConn
	br   *bufio.Reader
}

// reuse returns the kept upstream connection if the next request goes to its host
// and port, the policy in force still allows both name and address, and the
// destination has not closed it. The request is checked and logged as any other;
// only the resolution and the dial are saved, and the address stays the one checked.
func (s *session) reuse(r *rules, ev *Event, host string, port uint16) (*meteredConn, *bufio.Reader) {
	k := s.kept
	if k == nil || k.host != host || k.port != port || !r.allowed(host, port) || CheckAddr(k.addr, r.private) != nil {
		return nil, nil
	}
	if pinned, ok := r.override[host]; ok && pinned != k.addr {
		return nil, nil
	}
	if k.br.Buffered() > 0 || !idle(k.m.Conn) {
		return nil, nil
	}
	ev.Addr = k.addr
	k.m.ev = ev
	return k.m, k.br
}

// dropKept closes the kept upstream connection, if any.
func (s *session) dropKept() {
	if s.kept != nil {
		s.kept.m.Close()
		s.kept = nil
		s.detach()
	}
}

func containsSecret(list []secretRule, s secretRule) bool {
	for _, x := range list {
		if x.placeholder == s.placeholder {
			return true
		}
	}
	return false
}
