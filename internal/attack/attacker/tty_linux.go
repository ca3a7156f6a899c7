package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	register("tiocsti", tiocstiVector)
	register("tiocsti-ctty", tiocstiCtty)
	register("highbits", highBits)
}

const (
	cmdTIOCSTI   = 0x5412
	cmdTIOCLINUX = 0x541C
	hiBit        = 1 << 32
)

// tiocstiVector mirrors CVE-2017-5226 (bubblewrap: TIOCSTI pushed characters into the
// input of the controlling terminal outside the sandbox) and its TIOCLINUX cousin,
// including the variant with bit 32 of the command set, which the kernel truncates
// away (the command is an unsigned int) but a 64-bit filter comparison would not.
//
// It tries descriptors 0, 1 and 2 (pipes: the kernel alone answers ENOTTY, so EPERM
// there is the filter's), then, if the sandbox has /dev/ptmx, a child in a new session
// whose controlling terminal is a fresh pty: there TIOCSTI is legal for an unprivileged
// process, so only a filter can refuse it.
//
// Attempts: "FD:CMD" where FD is 0|1|2|ctty|devtty and CMD is sti|sti-hi|linux|linux-hi.
func tiocstiVector(args []string) {
	for _, fd := range []int{0, 1, 2} {
		ttyIoctls(strconv.Itoa(fd), fd)
	}
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		fail("open:ptmx", err)
		return
	}
	defer unix.Close(m)
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		fail("open:pts", err)
		return
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		fail("open:pts", err)
		return
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		fail("open:pts", err)
		return
	}
	defer pts.Close()
	self, _ := os.Executable()
	cmd := exec.Command(self, "tiocsti-ctty")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	report("ctty-child", cmd.Run(), "child with a controlling tty ran")
}

// tiocstiCtty runs in a session whose controlling terminal is its stdin.
func tiocstiCtty(args []string) {
	ttyIoctls("ctty", 0)
	if fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		ttyIoctls("devtty", fd)
		unix.Close(fd)
	} else {
		fail("open:devtty", err)
	}
}

func ttyIoctls(name string, fd int) {
	for _, c := range []struct {
		name string
		cmd  uint64
		arg  byte
	}{
		{"sti", cmdTIOCSTI, '#'},
		{"sti-hi", cmdTIOCSTI | hiBit, '#'},
		{"linux", cmdTIOCLINUX, 6}, // TIOCL_GETSHIFTSTATE: harmless, but the whole ioctl must be denied
		{"linux-hi", cmdTIOCLINUX | hiBit, 6},
	} {
		err := ioctlByte(fd, c.cmd, c.arg)
		report(name+":"+c.name, err, "ioctl %#x accepted", c.cmd)
	}
}

// highBits sets bit 32 (and above) in arguments the kernel reads as 32-bit ints: an
// allow-list or deny-list that compares the full 64-bit register sees a different
// value from the one the kernel acts on (isolate's libseccomp finding).
//
// Attempts: socket families AF_NETLINK, AF_VSOCK, AF_PACKET with bit 32 set, a raw
// AF_INET socket type with bit 32 set, keyctl with bit 32 set in the option; the low
// variants too, for comparison.
func highBits(args []string) {
	for _, c := range []struct {
		name           string
		dom, typ, prot uint64
	}{
		{"netlink", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
		{"netlink-hi", unix.AF_NETLINK | hiBit, unix.SOCK_RAW, unix.NETLINK_ROUTE},
		{"vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0},
		{"vsock-hi", unix.AF_VSOCK | hiBit, unix.SOCK_STREAM, 0},
		{"packet", unix.AF_PACKET, unix.SOCK_RAW, 0x300},
		{"packet-hi", unix.AF_PACKET | hiBit, unix.SOCK_RAW, 0x300},
		{"inet-raw-hi", unix.AF_INET, unix.SOCK_RAW | hiBit, unix.IPPROTO_ICMP},
		{"inet-raw-hi-proto", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP | hiBit},
	} {
		r, _, e := unix.Syscall(unix.SYS_SOCKET, uintptr(c.dom), uintptr(c.typ), uintptr(c.prot))
		if e == 0 {
			unix.Close(int(r))
		}
		report("socket:"+c.name, errnoOf(e), "socket created")
	}
	for _, c := range []struct {
		name string
		opt  uint64
	}{
		{"keyctl", unix.KEYCTL_GET_KEYRING_ID},
		{"keyctl-hi", unix.KEYCTL_GET_KEYRING_ID | hiBit},
	} {
		_, err := keyctl64(c.opt, uintptr(unix.KEY_SPEC_SESSION_KEYRING&0xffffffff))
		report(c.name, err, "keyctl accepted")
	}
	for _, c := range []struct {
		name string
		cmd  uint64
	}{
		{"ioctl-sti-hi", cmdTIOCSTI | hiBit},
		{"ioctl-sti-hi63", cmdTIOCSTI | 1<<63},
		{"ioctl-linux-hi", cmdTIOCLINUX | hiBit},
	} {
		err := ioctlByte(0, c.cmd, 'x')
		report(c.name, err, "ioctl accepted")
	}
}
