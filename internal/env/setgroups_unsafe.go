//go:build linux

package env

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// setThreadGroups is setgroups(2) for the calling thread only (the Go and libc
// wrappers apply it to every thread of the process).
func setThreadGroups(groups []int) error {
	gs := make([]uint32, len(groups))
	for i, g := range groups {
		gs[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0); e != 0 {
		return e
	}
	return nil
}
