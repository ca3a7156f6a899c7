//go:build !linux || !amd64

package seccomp

import "golang.org/x/net/bpf"

// Install fails with ErrUnsupported: the filter is for Linux on x86_64 only, and
// loading it on another architecture would kill every call at the arch check.
func Install(prog []bpf.RawInstruction) error {
	return ErrUnsupported
}
