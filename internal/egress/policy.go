package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Policy is what one sandbox may reach. Its zero value allows nothing: an empty
// allowlist is "deny all", never "allow all".
type Policy struct {
	// Allow lists the hosts that may be reached: NAME, *.SUFFIX, either with :PORT
	// (ParsePattern), or preset:NAME for a package registry's hosts (Presets).
	Allow []string `json:"allow,omitempty"`
	// AllowPrivate opens the special-purpose addresses in these prefixes (a LAN
	// registry, a test host) to the names in Allow. It allows no name by itself,
	// and never opens loopback, unspecified or cloud metadata addresses (CheckAddr).
	AllowPrivate []netip.Prefix `json:"allow_private,omitempty"`
	// DNSOverride pins names to addresses; the proxy asks no resolver for them. The
	// address is checked like any answer.
	DNSOverride map[string]netip.Addr `json:"dns_override,omitempty"`
	// Secrets are injected into requests to their hosts (Secret).
	Secrets []Secret `json:"secrets,omitempty"`
	Limits  Limits   `json:"limits"`
	// Scan reads what leaves and refuses a request that carries a secret (Scan).
	Scan Scan `json:"scan,omitzero"`
}

// Limits bound one sandbox's use of the proxy. Zero means the default.
type Limits struct {
	// MaxConns bounds the sandbox's open connections to the proxy (each carries at
	// most one upstream connection at a time). Default 256.
	MaxConns int `json:"max_conns,omitempty"`
	// MaxBytes bounds the bytes carried in both directions over the proxy's life;
	// past it every connection is cut and new ones are refused. Default: no bound.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// DefaultMaxConns is Limits.MaxConns when it is zero.
const DefaultMaxConns = 256

// PolicyError names the entry of a Policy that is wrong.
type PolicyError struct {
	Field string // "allow[2]", "dns_override[\"x\"]", "secrets[0].hosts[1]"
	Err   error
}

func (e *PolicyError) Error() string { return "egress policy: " + e.Field + ": " + e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }

// rules is a validated Policy in the form the proxy consults. A non-nil err means
// the policy failed validation: every connection is refused.
type rules struct {
	allow    []Pattern
	private  []netip.Prefix
	override map[string]netip.Addr
	secrets  []secretRule
	maxConns int
	maxBytes int64
	scan     scanRule
	err      error
}

type secretRule struct {
	name, placeholder, value string
	hosts                    []Pattern
}

// denyAll is the rules of a proxy whose policy is invalid.
func denyAll(err error) *rules { return &rules{err: err, maxConns: DefaultMaxConns} }

// Validate reports the first thing wrong with the policy, as a *PolicyError.
func (p Policy) Validate() error {
	_, err := compile(p)
	return err
}

func compile(p Policy) (*rules, error) {
	r := &rules{maxConns: p.Limits.MaxConns, maxBytes: p.Limits.MaxBytes, override: map[string]netip.Addr{}}
	for i, entry := range p.Allow {
		pats, err := ParseAllow(entry)
		if err != nil {
			return nil, &PolicyError{Field: fmt.Sprintf("allow[%d] %q", i, entry), Err: err}
		}
		r.allow = append(r.allow, pats...)
	}
	for i, pfx := range p.AllowPrivate {
		if err := checkPrefix(pfx); err != nil {
			return nil, &PolicyError{Field: fmt.Sprintf("allow_private[%d]", i), Err: err}
		}
		r.private = append(r.private, pfx)
	}
	for _, name := range sortedKeys(p.DNSOverride) {
		field := fmt.Sprintf("dns_override[%q]", name)
		host, err := CanonicalHost(name)
		if err != nil {
			return nil, &PolicyError{Field: field, Err: err}
		}
		a := p.DNSOverride[name]
		if !a.IsValid() || a.Zone() != "" {
			return nil, &PolicyError{Field: field, Err: fmt.Errorf("%q is not an address without a zone", a)}
		}
		if old, dup := r.override[host]; dup && old != a.Unmap() {
			return nil, &PolicyError{Field: field, Err: fmt.Errorf("%s is already pinned to %s", host, old)}
		}
		r.override[host] = a.Unmap()
	}
	seen := map[string]bool{}
	for i, s := range p.Secrets {
		field := fmt.Sprintf("secrets[%d]", i)
		sr, err := compileSecret(s)
		if err == nil && (seen[s.Name] || seen[s.Placeholder]) {
			err = fmt.Errorf("secret %s or its placeholder appears twice", s.Name)
		}
		if err != nil {
			return nil, &PolicyError{Field: field, Err: err}
		}
		seen[s.Name], seen[s.Placeholder] = true, true
		r.secrets = append(r.secrets, sr)
	}
	var err error
	if r.scan, err = compileScan(p.Scan); err != nil {
		return nil, &PolicyError{Field: "scan.max_body", Err: err}
	}
	switch {
	case r.maxConns < 0:
		return nil, &PolicyError{Field: "limits.max_conns", Err: errors.New("negative")}
	case r.maxBytes < 0:
		return nil, &PolicyError{Field: "limits.max_bytes", Err: errors.New("negative")}
	case r.maxConns == 0:
		r.maxConns = DefaultMaxConns
	}
	return r, nil
}

// ParseAllow parses one allowlist entry, as Policy.Allow takes it: a pattern
// (ParsePattern) or "preset:NAME", which stands for the preset's patterns. Other
// packages that name hosts the way a sandbox's policy does (the permission policy)
// parse them with it.
func ParseAllow(entry string) ([]Pattern, error) {
	expanded, err := expandAllow(entry)
	if err != nil {
		return nil, err
	}
	var out []Pattern
	for _, e := range expanded {
		pat, err := ParsePattern(e)
		if err != nil {
			return nil, err
		}
		out = append(out, pat)
	}
	return out, nil
}

func checkPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return fmt.Errorf("%q is not a CIDR prefix", p)
	case p.Addr().Zone() != "" || p.Addr().Is4In6():
		return fmt.Errorf("%s: write an IPv4 prefix as IPv4, without a zone", p)
	case p.Masked() != p:
		return fmt.Errorf("%s has host bits set; did you mean %s?", p, p.Masked())
	}
	return nil
}

func compileSecret(s Secret) (secretRule, error) {
	if err := checkSecretName(s.Name); err != nil {
		return secretRule{}, err
	}
	if err := checkPlaceholder(s.Name, s.Placeholder); err != nil {
		return secretRule{}, err
	}
	if err := checkSecretValue(s); err != nil {
		return secretRule{}, err
	}
	if len(s.Hosts) == 0 {
		return secretRule{}, fmt.Errorf("secret %s names no host", s.Name)
	}
	sr := secretRule{name: s.Name, placeholder: s.Placeholder, value: s.Value}
	for j, h := range s.Hosts {
		pats, err := ParseAllow(h)
		if err != nil {
			return secretRule{}, fmt.Errorf("secret %s: hosts[%d] %q: %w", s.Name, j, h, err)
		}
		sr.hosts = append(sr.hosts, pats...)
	}
	return sr, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// allowed reports whether the canonical name and port match the allowlist.
func (r *rules) allowed(host string, port uint16) bool {
	return r.err == nil && slices.ContainsFunc(r.allow, func(p Pattern) bool { return p.Match(host, port) })
}

// secretsFor splits the secrets into those whose hosts match host:port and the rest.
func (r *rules) secretsFor(host string, port uint16) (match, other []secretRule) {
	for _, s := range r.secrets {
		if slices.ContainsFunc(s.hosts, func(p Pattern) bool { return p.Match(host, port) }) {
			match = append(match, s)
		} else {
			other = append(other, s)
		}
	}
	return match, other
}

// String lists the allowlist, for messages.
func (r *rules) String() string {
	var b strings.Builder
	for i, p := range r.allow {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}
