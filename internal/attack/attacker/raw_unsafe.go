//go:build linux

package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw system calls whose arguments carry pointers. They pass every argument as a full
// 64-bit word, so callers can set bits the C prototypes would truncate (the point of
// the high-bit vectors).

// ioctlByte calls ioctl(fd, cmd, &b).
func ioctlByte(fd int, cmd uint64, b byte) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(unsafe.Pointer(&b)))
	return errnoOf(e)
}

// ioUringSetup calls io_uring_setup(entries, &params) and returns the ring descriptor.
func ioUringSetup(entries uint32) (int, error) {
	var params [120]byte // struct io_uring_params
	r, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&params[0])), 0)
	return int(r), errnoOf(e)
}

// keyctl64 calls keyctl with a full 64-bit option word.
func keyctl64(option uint64, arg2 uintptr) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_KEYCTL, uintptr(option), arg2, 0, 0, 0, 0)
	return int(r), errnoOf(e)
}

// addKey calls add_key("user", desc, payload, ring).
func addKey(desc string, payload []byte, ring int) (int, error) {
	typ, _ := unix.BytePtrFromString("user")
	d, _ := unix.BytePtrFromString(desc)
	r, _, e := unix.Syscall6(unix.SYS_ADD_KEY, uintptr(unsafe.Pointer(typ)), uintptr(unsafe.Pointer(d)),
		uintptr(unsafe.Pointer(&payload[0])), uintptr(len(payload)), uintptr(ring), 0)
	return int(r), errnoOf(e)
}

// mqOpen calls mq_open(name, O_RDWR|flags, 0600, NULL).
func mqOpen(name string, flags int) (int, error) {
	p, _ := unix.BytePtrFromString(name)
	r, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(unix.O_RDWR|flags), 0o600, 0, 0, 0)
	return int(r), errnoOf(e)
}

// mmap32 maps one page below 4 GiB, where an i386 system call can address it.
func mmap32() ([]byte, uintptr, error) {
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_32BIT)
	if err != nil {
		return nil, 0, err
	}
	return b, uintptr(unsafe.Pointer(&b[0])), nil
}

// putU32 stores v at b[off:] in host byte order.
func putU32(b []byte, off int, v uint32) { *(*uint32)(unsafe.Pointer(&b[off])) = v }

// processVMWrite writes one byte from this process to addr in pid.
func processVMWrite(pid int, addr uintptr) error {
	one := []byte{0}
	_, err := unix.ProcessVMWritev(pid, []unix.Iovec{{Base: &one[0], Len: 1}}, []unix.RemoteIovec{{Base: addr, Len: 1}}, 0)
	return err
}

// processVMRead reads n bytes at addr in pid.
func processVMRead(pid int, addr uintptr, n int) ([]byte, error) {
	buf := make([]byte, n)
	_, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &buf[0], Len: uint64(n)}}, []unix.RemoteIovec{{Base: addr, Len: n}}, 0)
	return buf, err
}

// bytePtr returns a pointer to a NUL-terminated copy of s, as a uintptr-able pointer.
func bytePtr(s string) unsafe.Pointer {
	p, _ := unix.BytePtrFromString(s)
	return unsafe.Pointer(p)
}

// schedSetschedulerIdle calls sched_setscheduler(pid, SCHED_IDLE, &{0}).
func schedSetschedulerIdle(pid int) error {
	var prio int32
	_, _, e := unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(pid), unix.SCHED_IDLE, uintptr(unsafe.Pointer(&prio)))
	return errnoOf(e)
}
