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
	tokens  []config.Token
	rateOf  map[string]config.Rate
	mu      sync.Mutex
	buckets map[string]*bucket
}

// NewAuth returns the authenticator of the daemon's tokens in cfg.
func NewAuth(cfg *config.Config) *Auth {
	rates := map[string]config.Rate{}
	for name, t := range cfg.Tenants {
		rates[name] = t.Rate
	}
	return NewTokenAuth(cfg.Tokens, rates)
}

// NewTokenAuth returns the authenticator of tokens (loaded: digests only),
// applying rates by tenant (a tenant not named: unbounded). The coordinator's
// API uses it with its own tokens (config.Coordinator).
func NewTokenAuth(tokens []config.Token, rates map[string]config.Rate) *Auth {
	return &Auth{tokens: tokens, rateOf: rates, buckets: map[string]*bucket{}}
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
	r := a.rateOf[tenant]
	if r.PerSecond <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.buckets[tenant]
	if b == nil {
		burst := float64(r.Burst)
		if burst < 1 {
			burst = max(1, r.PerSecond)
		}
		b = &bucket{rate: r.PerSecond, burst: burst, tokens: burst, last: time.Now()}
		a.buckets[tenant] = b
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
