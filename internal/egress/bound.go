package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// Within reports whether p allows nothing that bound does not: every host pattern of
// p (presets expanded) falls under one of bound's, every AllowPrivate prefix of p
// lies inside one of bound's, and every DNSOverride of p pins its name to an
// address inside bound's AllowPrivate (a pin to a public address would let an
// allowed name reach any host). Secrets and limits are not compared. An invalid p
// or bound is an error; the error names p's first entry outside the bound.
func (p Policy) Within(bound Policy) error {
	r, err := compile(p)
	if err != nil {
		return err
	}
	b, err := compile(bound)
	if err != nil {
		return fmt.Errorf("bound: %w", err)
	}
	for _, pat := range r.allow {
		if !b.covers(pat) {
			return &PolicyError{Field: "allow", Err: fmt.Errorf("%s is outside what may be allowed here", pat)}
		}
	}
	for _, pfx := range r.private {
		ok := false
		for _, bp := range b.private {
			ok = ok || (bp.Bits() <= pfx.Bits() && bp.Contains(pfx.Addr()))
		}
		if !ok {
			return &PolicyError{Field: "allow_private", Err: fmt.Errorf("%s is outside what may be allowed here", pfx)}
		}
	}
	for _, name := range sortedKeys(r.override) {
		if !b.privateAllows(r.override[name]) {
			return &PolicyError{Field: fmt.Sprintf("dns_override[%q]", name), Err: errors.New("pins to an address outside what may be allowed here")}
		}
	}
	return nil
}

// covers reports whether every name and port pat matches is matched by one of r's
// patterns.
func (r *rules) covers(pat Pattern) bool {
	for _, b := range r.allow {
		if b.Port != 0 && b.Port != pat.Port {
			continue
		}
		switch {
		case !b.Wildcard:
			if !pat.Wildcard && pat.Host == b.Host {
				return true
			}
		case b.Match(pat.Host, b.Port), pat.Wildcard && pat.Host == b.Host:
			// pat's host is below b's suffix (and so is every name under it), or
			// pat is b's own wildcard.
			return true
		}
	}
	return false
}

// privateAllows reports whether a lies in one of r's AllowPrivate prefixes.
func (r *rules) privateAllows(a netip.Addr) bool {
	for _, p := range r.private {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
