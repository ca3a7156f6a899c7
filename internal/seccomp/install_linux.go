//go:build linux && amd64

package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Install loads prog as a seccomp filter for every thread of the calling process
// (SECCOMP_FILTER_FLAG_TSYNC), and so for every process it later starts. The filter
// cannot be removed. The calling thread must already have no_new_privs set: call
// runtime.LockOSThread, then prctl(PR_SET_NO_NEW_PRIVS), then Install, on the same
// thread. The kernel copies no_new_privs to the other threads along with the filter.
func Install(prog []bpf.RawInstruction) error {
	if len(prog) == 0 || len(prog) > maxInsns {
		return fmt.Errorf("%w: %d instructions, the kernel takes 1..%d", ErrTooLarge, len(prog), maxInsns)
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("read no_new_privs: %w", err)
	}
	if nnp != 1 {
		// Root could install the filter anyway, but then an exec of a set-user-ID
		// program would still gain privileges; the sandbox never wants that.
		return ErrNoNewPrivs
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	tid, err := setModeFilter(unix.SECCOMP_FILTER_FLAG_TSYNC, filter)
	if err != nil {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", err)
	}
	if tid != 0 {
		// With TSYNC the kernel returns the id of a thread it could not sync
		// (one already under a filter not shared with this thread).
		return fmt.Errorf("%w: thread %d", ErrThreadSync, tid)
	}
	return nil
}
