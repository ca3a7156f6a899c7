package nsinit

import (
	"golang.org/x/sys/unix"
)

// openPTY opens a pty of the sandbox's own devpts instance (/dev/ptmx links to its
// ptmx, see mountDev) with the command user's file system identity, so that its
// terminal belongs to the command, and returns the master and the terminal, both
// close-on-exec. The terminal is opened from the master (TIOCGPTPEER), never by
// name, so no other pty can stand in for it.
func openPTY(size Winsize) (master, term int, err error) {
	err = asCommandUser(func() error {
		m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return at("open /dev/ptmx", err)
		}
		if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
			unix.Close(m)
			return at("unlock pty", err)
		}
		ws := &unix.Winsize{Row: size.Rows, Col: size.Cols}
		if err := unix.IoctlSetWinsize(m, unix.TIOCSWINSZ, ws); err != nil {
			unix.Close(m)
			return at("set pty size", err)
		}
		t, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
		if errno != 0 {
			unix.Close(m)
			return at("open pty terminal", errno)
		}
		master, term = m, int(t)
		return nil
	})
	return master, term, err
}
