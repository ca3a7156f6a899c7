//go:build linux

package nsinit

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// capsetZeroAllThreads clears the effective, permitted and inheritable capability
// sets of every thread (pid 0 in the header: each thread itself). psx, as go-landlock
// uses it, is syscall.AllThreadsSyscall without cgo and libpsx with it:
// AllThreadsSyscall alone fails with ENOTSUP in a cgo binary.
func capsetZeroAllThreads() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if e != 0 {
		return syscall.Errno(e)
	}
	return nil
}
