package api

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agentbox/agentbox/internal/access"
)

// check authenticates r and applies the tenant's rate.
func (s *Server) check(r *http.Request) (access.Caller, error) {
	return s.auth.Request(r)
}

// authenticate puts the caller in the request's context or answers 401/429.
func (s *Server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.check(r)
		if c.Tenant != "" {
			r = r.WithContext(access.WithCaller(r.Context(), c))
			if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
				info.caller = c
			}
		}
		if err != nil {
			if err == access.ErrUnauthenticated {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentbox"`)
			}
			s.writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// mcpAuth authenticates /mcp requests like any other and hands the caller to the
// MCP SDK as token info, which the SDK passes to tool handlers and uses to bind a
// session to its tenant (a session cannot be used with another tenant's token).
func (s *Server) mcpAuth(h http.Handler) http.Handler {
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		c, ok := s.auth.Verify(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: c.Scopes, UserID: c.Tenant + "/" + c.Token,
			Expiration: time.Now().Add(24 * time.Hour), Extra: map[string]any{callerExtra: c}}, nil
	}
	inner := auth.RequireBearerToken(verify, nil)(h)
	return s.authenticate(inner)
}

// callerExtra is the auth.TokenInfo.Extra key holding the Caller.
const callerExtra = "agentbox.caller"

// CallerFromTokenInfo returns the caller mcpAuth stored in the MCP token info.
func CallerFromTokenInfo(ti *auth.TokenInfo) (access.Caller, bool) {
	if ti == nil || ti.Extra == nil {
		return access.Caller{}, false
	}
	c, ok := ti.Extra[callerExtra].(access.Caller)
	return c, ok
}
