package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/egress"
)

// DomainPattern is a host pattern in the syntax of package egress's allowlist
// (NAME, *.SUFFIX, either with :PORT, preset:NAME), parsed by egress.ParseAllow so
// that the permission policy and the sandbox's proxy read a host the same way, or
// "*" for every host, or "mcp:SERVER" for a mounted MCP server (the only
// destination the policy can name for its tools).
type DomainPattern struct {
	src  string
	any  bool
	mcp  string // "mcp:SERVER": a mounted MCP server, the destination of its tools
	pats []egress.Pattern
}

// ParseDomainPattern parses a domain pattern.
func ParseDomainPattern(s string) (DomainPattern, error) {
	if s == "*" {
		return DomainPattern{src: s, any: true}, nil
	}
	if server, ok := strings.CutPrefix(s, "mcp:"); ok {
		if _, err := path.Match(server, ""); err != nil || server == "" {
			return DomainPattern{}, fmt.Errorf("domain %q: want mcp:SERVER with a server name or '*' pattern", s)
		}
		return DomainPattern{src: s, mcp: server}, nil
	}
	pats, err := egress.ParseAllow(s)
	if err != nil {
		return DomainPattern{}, fmt.Errorf("domain %q: %w", s, err)
	}
	return DomainPattern{src: s, pats: pats}, nil
}

func (d DomainPattern) String() string { return d.src }

// Match reports whether a canonical host and port fall under the pattern. The
// host "" (a command whose destination is whatever the sandbox's egress allows) is
// matched by "*" only.
func (d DomainPattern) Match(host string, port uint16) bool {
	if d.any {
		return true
	}
	if host == "" {
		return false
	}
	if d.mcp != "" {
		server, ok := strings.CutPrefix(host, "mcp:")
		return ok && glob(d.mcp, server)
	}
	for _, p := range d.pats {
		if p.Match(host, port) {
			return true
		}
	}
	return false
}

// CanonicalHost is egress.CanonicalHost: the one spelling of a host name the
// policy compares.
func CanonicalHost(h string) (string, error) { return egress.CanonicalHost(h) }
