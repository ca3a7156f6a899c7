//go:build linux

package landlock

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// ABI returns the best Landlock ABI the kernel offers, capped at the newest one
// go-landlock knows; 0 means none. It costs one or two syscalls.
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	if v >= 6 {
		// As go-landlock does: a kernel without the fix for the signal scoping
		// bug (erratum 2) is used as ABI 5, so scopes are never half-trusted.
		errata, err := ll.LandlockGetErrata()
		if err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return min(v, maxABI)
}

// Restrict confines the calling process, all its threads and its future children
// with r at the best ABI available, and sets no_new_privs. It cannot be undone. It
// returns ErrUnsupported when the kernel has no Landlock, unless r.BestEffort.
//
// Below ABI 8 every OS thread ends up in a Landlock domain of its own (identical
// rules, see the package comment), so with scopes the process may fail to signal a
// child, or reach an abstract socket, that another of its threads created. Use Exec
// when the process's only remaining job is to become the sandboxed program.
func Restrict(r Ruleset) (Applied, error) {
	return restrictAt(r, ABI())
}

// Preview validates r and reports what Restrict or Exec would enforce on this
// kernel, without enforcing anything.
func Preview(r Ruleset) (Applied, error) {
	p, err := prepare(r, ABI())
	if err != nil {
		return Applied{}, err
	}
	return p.applied(), nil
}

// restrictAt builds r for the given ABI, which tests set below the kernel's to check
// the downgrade for real.
func restrictAt(r Ruleset, abi int) (Applied, error) {
	p, err := prepare(r, abi)
	if err != nil || p.abi == 0 {
		return Applied{}, err
	}
	if err := p.config().Restrict(p.rules()...); err != nil {
		return Applied{}, fmt.Errorf("landlock: restrict at ABI %d: %w", p.abi, err)
	}
	return p.applied(), nil
}

// prepare validates r and builds it for abi. At ABI 0 it fails closed unless
// BestEffort, which yields an empty plan.
func prepare(r Ruleset, abi int) (plan, error) {
	if err := r.validate(); err != nil {
		return plan{}, err
	}
	if err := r.check(); err != nil {
		return plan{}, err
	}
	if abi <= 0 && !r.BestEffort {
		return plan{}, ErrUnsupported
	}
	return build(r, abi), nil
}
