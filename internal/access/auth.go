package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"time"

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

// Request authenticates r by its bearer token and takes one request from the
// tenant's rate. The caller is returned with ErrRate too, for the log.
func (a *Auth) Request(r *http.Request) (Caller, error) {
	c, ok := a.Verify(bearer(r))
	if !ok {
		return Caller{}, ErrUnauthenticated
	}
	if !a.allow(c.Tenant) {
		return c, ErrRate
	}
	return c, nil
}
