package access

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentbox/agentbox/internal/config"
)

// Caller is who a request comes from, as its token says.
type Caller struct {
	Tenant string
	Task   string // fixed by the token, or ""
	Scopes []string
	Token  string // the token's name, for logs; never the secret
}

// Has reports whether the caller holds scope; admin holds every scope of its
// tenant, not operator (which sees every tenant).
func (c Caller) Has(scope string) bool {
	return slices.Contains(c.Scopes, scope) || (scope != config.ScopeOperator && slices.Contains(c.Scopes, config.ScopeAdmin))
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for the Guard to find.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller carried by ctx.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

var (
	// ErrUnauthenticated means the request carries no known bearer token.
	ErrUnauthenticated = errors.New("missing or unknown bearer token")
	// ErrForbidden is matched by every *ScopeError and by ErrOutsideRoots.
	ErrForbidden = errors.New("forbidden")
	// ErrOutsideRoots means a workspace or a mount source lies outside the
	// directories the tenant's configuration allows (workspace_roots, mount_roots).
	ErrOutsideRoots = fmt.Errorf("%w", ErrForbidden) // its text is ErrForbidden's: the message says the rest
	// ErrRate means the tenant sent more requests than its rate allows.
	ErrRate = errors.New("request rate exceeded")
)

// ScopeError reports a token without the scope an operation needs.
type ScopeError struct{ Scope string }

func (e *ScopeError) Error() string { return fmt.Sprintf("token lacks the %q scope", e.Scope) }

func (e *ScopeError) Unwrap() error { return ErrForbidden }
