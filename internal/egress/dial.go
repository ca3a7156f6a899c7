package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// open resolves host, checks every answer against r, and connects to the first
// answer that accepts: the exact address it checked, so a second DNS answer (a
// rebinding) never comes into it. It records the address in ev.
func (s *session) open(r *rules, ev *Event, host string, port uint16) (net.Conn, Reason, string) {
	if r.err != nil {
		return nil, ReasonPolicyInvalid, clip(r.err.Error())
	}
	if !r.allowed(host, port) {
		return nil, ReasonNotAllowed, fmt.Sprintf("%s:%d is not in the allowlist", host, port)
	}
	if r.maxBytes > 0 && s.p.bytes.Load() >= r.maxBytes {
		return nil, ReasonByteLimit, fmt.Sprintf("%d bytes carried (limit %d)", s.p.bytes.Load(), r.maxBytes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.p.cfg.DialTimeout)
	defer cancel()
	addrs, err := s.resolve(ctx, r, host)
	if err != nil {
		return nil, ReasonResolveFailed, clip(err.Error())
	}
	for _, a := range addrs {
		ev.Addr = a
		if err := CheckAddr(a, r.private); err != nil {
			return nil, ReasonAddressRefused, fmt.Sprintf("%s resolves to %s", host, err.(*AddrError).Error())
		}
		if s.p.isSelf(netip.AddrPortFrom(a, port)) {
			return nil, ReasonProxyItself, fmt.Sprintf("%s:%d is the proxy itself", a, port)
		}
	}
	var errs []error
	for _, a := range addrs {
		ev.Addr = a
		up, err := s.p.cfg.Dial(ctx, netip.AddrPortFrom(a, port))
		if err == nil {
			return up, "", ""
		}
		errs = append(errs, err)
	}
	return nil, ReasonDialFailed, clip(errors.Join(errs...).Error())
}

// resolve answers from DNSOverride, else from the resolver; IPv4-mapped answers are
// unmapped (the kernel would connect to the IPv4 address).
func (s *session) resolve(ctx context.Context, r *rules, host string) ([]netip.Addr, error) {
	if a, ok := r.override[host]; ok {
		return []netip.Addr{a}, nil
	}
	addrs, err := s.p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no address for %s", host)
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs, nil
}
