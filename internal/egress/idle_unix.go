//go:build unix

package egress

import (
	"net"
	"syscall"
)

// idle reports whether c is open with nothing to read: the destination has neither
// closed it nor sent anything unasked, so a kept connection may carry the next
// request. It peeks without waiting (a read deadline in the past would not reach the
// socket at all).
func idle(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var open bool
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN
		return true
	})
	return err == nil && open
}
