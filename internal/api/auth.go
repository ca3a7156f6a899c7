package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agentbox/agentbox/internal/config"
)

// Auth maps bearer tokens to callers and applies each tenant's request rate.
type Auth struct {
	tokens []config.Token
	mu     sync.Mutex
	rates  map[string]*bucket
	cfg    *config.Config
}

// NewAuth returns the authenticator of cfg's tokens.
func NewAuth(cfg *config.Config) *Auth {
	return &Auth{tokens: cfg.Tokens, rates: map[string]*bucket{}, cfg: cfg}
}

// Verify returns the caller a token stands for. Every configured digest is compared
// in constant time, with no early exit, so the time taken says nothing about which
// token (if any) matched.
func (a *Auth) Verify(token string) (Caller, bool) {
	if token == "" {
		return Caller{}, false
	}
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(d[:], a.tokens[i].Digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return Caller{}, false
	}
	t := a.tokens[match]
	return Caller{Tenant: t.Tenant, Task: t.Task, Scopes: t.Scopes, Token: t.Name}, true
}

// allow takes one request from the tenant's bucket.
func (a *Auth) allow(tenant string) bool {
	r := a.cfg.Tenants[tenant].Rate
	if r.PerSecond <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.rates[tenant]
	if b == nil {
		burst := float64(r.Burst)
		if burst < 1 {
			burst = max(1, r.PerSecond)
		}
		b = &bucket{rate: r.PerSecond, burst: burst, tokens: burst, last: time.Now()}
		a.rates[tenant] = b
	}
	return b.take(time.Now())
}

// bucket is a token bucket.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func (b *bucket) take(now time.Time) bool {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// check authenticates r and applies the tenant's rate.
func (s *Server) check(r *http.Request) (Caller, error) {
	c, ok := s.auth.Verify(bearer(r))
	if !ok {
		return Caller{}, ErrUnauthenticated
	}
	if !s.auth.allow(c.Tenant) {
		return c, ErrRate
	}
	return c, nil
}

// authenticate puts the caller in the request's context or answers 401/429.
func (s *Server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.check(r)
		if c.Tenant != "" {
			r = r.WithContext(WithCaller(r.Context(), c))
			if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
				info.caller = c
			}
		}
		if err != nil {
			if err == ErrUnauthenticated {
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
func CallerFromTokenInfo(ti *auth.TokenInfo) (Caller, bool) {
	if ti == nil || ti.Extra == nil {
		return Caller{}, false
	}
	c, ok := ti.Extra[callerExtra].(Caller)
	return c, ok
}
