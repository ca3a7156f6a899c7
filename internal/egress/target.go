package egress

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// target parses a request's host[:port]; a missing port is defPort, or an error if
// defPort is 0. It returns the canonical name, or a reason to refuse and the host
// as the log may show it.
func target(hostport string, defPort uint16) (host string, port uint16, reason Reason, detail string) {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == 0 {
			return quoteHost(hostport), 0, ReasonBadRequest, "want host:port"
		}
		h, port = hostport, defPort
	} else if port, err = parsePort(p); err != nil {
		return quoteHost(h), 0, ReasonBadRequest, err.Error()
	}
	name, err := CanonicalHost(h)
	var lit *LiteralError
	switch {
	case errors.As(err, &lit):
		return quoteHost(h), port, ReasonIPLiteral, clip(err.Error())
	case err != nil:
		return quoteHost(h), port, ReasonBadHost, clip(err.Error())
	}
	return name, port, "", ""
}

// agree checks the Host headers against the request's target: at most one, and the
// same name and port (a Host without a port means defPort). required demands one.
func agree(hosts []string, host string, port, defPort uint16, required bool) (Reason, string) {
	switch {
	case len(hosts) == 0 && !required:
		return "", ""
	case len(hosts) != 1:
		return ReasonHostMismatch, fmt.Sprintf("%d Host headers (want one)", len(hosts))
	}
	h, p, reason, _ := target(hosts[0], defPort)
	if reason != "" || h != host || p != port {
		return ReasonHostMismatch, fmt.Sprintf("Host header %s does not match %s:%d", quoteHost(hosts[0]), host, port)
	}
	return "", ""
}

// quoteHost is how an invalid host appears in the log: quoted and clipped.
func quoteHost(h string) string {
	if len(h) > 128 {
		h = h[:128]
	}
	return strconv.Quote(h)
}

func clip(s string) string {
	if len(s) > 512 {
		return s[:512] + "…"
	}
	return s
}
