package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/wire"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
)

// mcpOrigin guards /mcp as the MCP streamable HTTP transport requires: a request
// whose Origin is present and not allowed is refused (403), so that a web page a
// user visits cannot drive the daemon from their browser; a request without one
// (a program, not a browser) passes. Allowed are the configured mcp.allowed_origins
// and the daemon's own loopback origins (http://localhost:PORT, 127.0.0.1, [::1]
// on the port the request came in on). On a loopback TCP listener the Host must be
// a loopback name too, which defeats DNS rebinding (a page of evil.example whose
// name now resolves to 127.0.0.1 sends Host: evil.example).
func (s *Server) mcpOrigin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkOrigin(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) checkOrigin(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if local != nil && local.IP.IsLoopback() && !loopbackHost(r.Host) {
		return originError(fmt.Sprintf("host %q is not this daemon's: /mcp on a loopback address answers only localhost names", r.Host),
			"connect to localhost, 127.0.0.1 or [::1]")
	}
	origins := r.Header.Values("Origin")
	switch {
	case len(origins) == 0:
		return nil
	case len(origins) == 1:
		o := strings.ToLower(origins[0])
		if slices.Contains(s.cfg.MCP.AllowedOrigins, o) || ownOrigin(o, local) {
			return nil
		}
	}
	return originError(fmt.Sprintf("origin %q may not use /mcp", strings.Join(origins, ", ")),
		"add the origin to mcp.allowed_origins in the daemon's configuration, or connect from a program (no Origin header)")
}

func originError(msg, action string) error {
	return &wire.Error{Status: http.StatusForbidden, Err: access.ErrForbidden,
		Body: client.Error{Code: client.CodePermission, Message: msg, SuggestedAction: action}}
}

// ownOrigin reports whether o is http://<loopback name>:<the local port>.
func ownOrigin(o string, local *net.TCPAddr) bool {
	u, err := url.Parse(o)
	if err != nil || local == nil || u.Scheme != "http" || u.Path != "" || u.User != nil {
		return false
	}
	return u.Port() == strconv.Itoa(local.Port) && loopbackHost(u.Host)
}

// loopbackHost reports whether a Host (or URL host) names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
