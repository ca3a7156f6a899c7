package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/wire"
)

// Mux is where Mount serves the tools: the HTTP API's server, whose Handle puts
// the bearer token's caller in each request's context (access.WithCaller).
type Mux interface {
	Handle(pattern string, h http.Handler)
	HandleStream(pattern string, h http.Handler)
}

// Mount serves the tools at /mcp of m over streamable HTTP. A GET is a session's
// open-ended stream, which ends when shutdown begins; a POST carries tool calls,
// which finish within the grace period like any other request; a DELETE ends a
// session. allowedOrigins are the browser origins besides the daemon's own that
// may call it (see checkOrigin).
func Mount(m Mux, o Options, allowedOrigins []string) {
	h := httpHandler(o, allowedOrigins)
	m.HandleStream("GET /mcp", h)
	m.Handle("POST /mcp", h)
	m.Handle("DELETE /mcp", h)
}

// httpHandler serves the tools over streamable HTTP to the callers in the
// requests' contexts; a request with none is refused. Sessions are bound to the
// tenant and token that opened them (the SDK checks the token info's user id on
// every request of a session).
func httpHandler(o Options, allowedOrigins []string) http.Handler {
	s := NewServer(o)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute, Logger: o.Logger,
			// Room for files_upload's base64 tar (maxTarBytes) and its JSON.
			MaxRequestBodyBytes: 2 * maxTarBytes})
	h2 := auth.RequireBearerToken(tokenInfo, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkOrigin(r, allowedOrigins); err != nil {
			status, e := wire.Map(err, "", o.Redactor)
			if o.Denied != nil {
				c, _ := access.CallerFrom(r.Context())
				o.Denied(c.Tenant, e.Code)
			}
			b, _ := json.Marshal(client.Envelope{Error: &e})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(append(b, '\n'))
			return
		}
		h2.ServeHTTP(w, r)
	})
}

// tokenInfo hands the caller the server authenticated to the MCP SDK, which
// passes it to tool handlers and binds a session to it.
func tokenInfo(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	c, ok := access.CallerFrom(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: c.Scopes, UserID: c.Tenant + "/" + c.Token,
		Expiration: time.Now().Add(24 * time.Hour), Extra: map[string]any{callerExtra: c}}, nil
}

// callerExtra is the auth.TokenInfo.Extra key holding the Caller.
const callerExtra = "agentbox.caller"

func callerFromTokenInfo(ti *auth.TokenInfo) (access.Caller, bool) {
	if ti == nil || ti.Extra == nil {
		return access.Caller{}, false
	}
	c, ok := ti.Extra[callerExtra].(access.Caller)
	return c, ok
}

// checkOrigin guards the endpoint as the MCP streamable HTTP transport requires: a
// request whose Origin is present and not allowed is refused (403), so that a web
// page a user visits cannot drive the daemon from their browser; a request
// without one (a program, not a browser) passes. Allowed are allowed and the
// daemon's own loopback origins (http://localhost:PORT, 127.0.0.1, [::1] on the
// port the request came in on). On a loopback TCP listener the Host must be a
// loopback name too, which defeats DNS rebinding (a page of evil.example whose
// name now resolves to 127.0.0.1 sends Host: evil.example).
func checkOrigin(r *http.Request, allowed []string) error {
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
		if slices.Contains(allowed, o) || ownOrigin(o, local) {
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
