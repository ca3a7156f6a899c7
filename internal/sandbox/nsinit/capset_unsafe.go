//go:build linux

package nsinit

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// capsetAllThreads sets the effective and permitted capability sets of every thread
// to keep and clears their inheritable sets (pid 0 in the header: each thread
// itself). psx, as go-landlock uses it, is syscall.AllThreadsSyscall without cgo and
// libpsx with it: AllThreadsSyscall alone fails with ENOTSUP in a cgo binary.
func capsetAllThreads(keep uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for i := range data {
		data[i].Effective = uint32(keep >> (32 * i))
		data[i].Permitted = data[i].Effective
	}
	_, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if e != 0 {
		return syscall.Errno(e)
	}
	return nil
}
