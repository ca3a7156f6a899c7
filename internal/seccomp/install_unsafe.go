//go:build linux && amd64

package seccomp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// setModeFilter is seccomp(SECCOMP_SET_MODE_FILTER, flags, &prog). It returns the
// system call's non-negative result: 0, or with TSYNC the id of a thread that
// could not be synchronised.
func setModeFilter(flags uintptr, filter []unix.SockFilter) (int, error) {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
