package seccomp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/seccomp/internal/int80"
)

const (
	victimEnv       = "AGENTBOX_SECCOMP_VICTIM"        // which case to run
	victimFilterEnv = "AGENTBOX_SECCOMP_VICTIM_FILTER" // "1": install the filter first
	victimDirEnv    = "AGENTBOX_SECCOMP_VICTIM_DIR"    // a scratch directory
)

// victimCase is one thing a sandboxed process tries. run executes inside the
// victim and returns its outcome. filtered is the outcome under the default
// filter; unfiltered, if set, the outcome without it ("!x": anything but x).
type victimCase struct {
	name        string
	run         func() string
	filtered    string
	unfiltered  string
	selfInstall bool // run installs (or fails to install) the filter itself
}

var victimCases = []victimCase{
	// Denied outright.
	{name: "ptrace_traceme", run: sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME), filtered: "errno:EPERM"},
	{name: "ptrace_peek_parent", run: func() string {
		return sys(unix.SYS_PTRACE, unix.PTRACE_PEEKUSR, uintptr(os.Getppid()), 0)()
	}, filtered: "errno:EPERM", unfiltered: "errno:ESRCH"},
	{name: "unshare_newuser", run: sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "setns", run: sys(unix.SYS_SETNS, ^uintptr(0), 0), filtered: "errno:EPERM", unfiltered: "errno:EBADF"},
	{name: "mount_tmpfs", run: func() string {
		return outcome(unix.Mount("none", "/nonexistent-agentbox-seccomp", "tmpfs", 0, ""))
	}, filtered: "errno:EPERM", unfiltered: "errno:ENOENT"},
	{name: "fsopen", run: func() string {
		fd, err := unix.Fsopen("nonexistent-agentbox-fs", 0)
		closeIf(fd, err)
		return outcome(err)
	}, filtered: "errno:EPERM", unfiltered: "errno:ENODEV"},
	{name: "chroot", run: func() string { return outcome(unix.Chroot("/nonexistent-agentbox-seccomp")) },
		filtered: "errno:EPERM", unfiltered: "errno:ENOENT"},
	{name: "keyctl", run: func() string {
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		return outcome(err)
	}, filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "bpf", run: sys(unix.SYS_BPF, unix.BPF_PROG_LOAD, 0, 0), filtered: "errno:EPERM", unfiltered: "!errno:EPERM"},
	{name: "perf_event_open", run: sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0),
		filtered: "errno:EPERM", unfiltered: "errno:EFAULT"},
	{name: "userfaultfd", run: sysClose(unix.SYS_USERFAULTFD, unix.O_CLOEXEC), filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "io_uring_setup", run: sys(unix.SYS_IO_URING_SETUP, 1, 0), filtered: "errno:EPERM", unfiltered: "errno:EFAULT"},
	{name: "pidfd_getfd", run: sys(unix.SYS_PIDFD_GETFD, ^uintptr(0), 0, 0), filtered: "errno:EPERM", unfiltered: "errno:EBADF"},
	// Aimed at pid 1 (the sandbox's init; here the host's, so the controls use
	// arguments the kernel rejects before changing anything).
	{name: "prlimit64_read_pid1", run: func() string {
		var old unix.Rlimit
		return outcome(unix.Prlimit(1, unix.RLIMIT_NOFILE, nil, &old))
	}, filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "sched_setaffinity_pid1", run: sys(unix.SYS_SCHED_SETAFFINITY, 1, 0, 0), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "sched_setscheduler_pid1", run: sys(unix.SYS_SCHED_SETSCHEDULER, 1, 0, 0), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "sched_setattr_pid1", run: sys(unix.SYS_SCHED_SETATTR, 1, 0, 0), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "setpriority_pid1", run: sys(unix.SYS_SETPRIORITY, 99, 1, 0), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "setpriority_prio_user", run: sys(unix.SYS_SETPRIORITY, unix.PRIO_USER, 0x7ffffffe, 0), filtered: "errno:EPERM", unfiltered: "errno:ESRCH"},
	{name: "ioprio_set_pid1", run: sys(unix.SYS_IOPRIO_SET, 99, 1, 0), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "syslog_size", run: sys(unix.SYS_SYSLOG, 10, 0, 0), filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "clock_settime_null", run: sys(unix.SYS_CLOCK_SETTIME, unix.CLOCK_REALTIME, 0), filtered: "errno:EPERM", unfiltered: "errno:EFAULT"},
	{name: "reboot_bad_magic", run: sys(unix.SYS_REBOOT, 0, 0, 0), filtered: "errno:EPERM", unfiltered: "errno:EINVAL"},
	{name: "open_by_handle_at", run: sys(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0), filtered: "errno:EPERM", unfiltered: "!errno:EPERM"},
	// EOPNOTSUPP and ENOTSUP are the same number on Linux; ErrnoName says ENOTSUP.
	{name: "name_to_handle_at", run: sys(unix.SYS_NAME_TO_HANDLE_AT, ^uintptr(0), 0, 0, 0, 0), filtered: "errno:ENOTSUP", unfiltered: "!errno:ENOTSUP"},
	{name: "modify_ldt_read", run: sys(unix.SYS_MODIFY_LDT, 0, 0, 0), filtered: "errno:ENOSYS", unfiltered: "ok"},
	{name: "personality_no_aslr", run: sys(unix.SYS_PERSONALITY, 0x0040000), filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "personality_query", run: sys(unix.SYS_PERSONALITY, 0xffffffff), filtered: "ok"},

	// clone: namespaces denied, plain forks allowed; clone3 sent back to clone.
	{name: "clone3", run: sys(unix.SYS_CLONE3, 0, 0), filtered: "errno:ENOSYS", unfiltered: "errno:EINVAL"},
	{name: "exec_in_new_userns", run: func() string {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
		return outcome(cmd.Run())
	}, filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "clone_newuser_high_bits", run: cloneNewUserHighBits, filtered: "errno:EPERM"},

	// Sockets: only unix, inet, inet6, and only plain protocols.
	{name: "socket_netlink", run: socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), filtered: "errno:EAFNOSUPPORT", unfiltered: "ok"},
	{name: "socket_netlink_high_bits", run: socket(1<<32|unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), filtered: "errno:EAFNOSUPPORT", unfiltered: "ok"},
	{name: "socket_packet", run: socket(unix.AF_PACKET, unix.SOCK_RAW, 0), filtered: "errno:EAFNOSUPPORT", unfiltered: "ok"},
	{name: "socket_inet_sock_packet", run: socket(unix.AF_INET, unix.SOCK_PACKET, 0), filtered: "errno:EAFNOSUPPORT", unfiltered: "ok"},
	{name: "socket_mptcp", run: socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), filtered: "errno:EPROTONOSUPPORT", unfiltered: "ok"},
	{name: "socket_mptcp_high_bits", run: socket(unix.AF_INET, unix.SOCK_STREAM, 1<<40|unix.IPPROTO_MPTCP), filtered: "errno:EPROTONOSUPPORT", unfiltered: "ok"},
	{name: "socket_unix", run: socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0), filtered: "ok"},
	{name: "socket_tcp", run: socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP), filtered: "ok"},
	{name: "socket_udp6", run: socket(unix.AF_INET6, unix.SOCK_DGRAM, 0), filtered: "ok"},

	// Terminal ioctls, on a fresh pty pair.
	{name: "ioctl_tiocsti_high_bits", run: onPty(func(fd int) error {
		return unix.IoctlSetPointerInt(fd, 1<<32|unix.TIOCSTI, 'x')
	}), filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "ioctl_tioclinux", run: onPty(func(fd int) error {
		return unix.IoctlSetPointerInt(fd, unix.TIOCLINUX, 6)
	}), filtered: "errno:EPERM", unfiltered: "!errno:EPERM"},
	{name: "ioctl_tiocsetd_n_tty", run: onPty(func(fd int) error {
		return unix.IoctlSetPointerInt(fd, unix.TIOCSETD, 0) // N_TTY, the default discipline
	}), filtered: "errno:EPERM", unfiltered: "ok"},
	{name: "ioctl_tcgets", run: onPty(func(fd int) error {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	}), filtered: "ok"},

	// Other ABIs: killed with SIGSYS.
	{name: "x32_getpid", run: sys(x32SyscallBit | unix.SYS_GETPID), filtered: "signal:SIGSYS", unfiltered: "errno:ENOSYS"},
	{name: "int80_getpid", run: func() string {
		if r := int80.Syscall(20, 0, 0, 0); int(int32(r)) != os.Getpid() { // 20 is getpid on i386
			return fmt.Sprintf("int $0x80 getpid returned %d", int32(r))
		}
		return "ok"
	}, filtered: "signal:SIGSYS", unfiltered: "ok"},

	// Everyday work goes on, and the filter covers every thread and child.
	{name: "normal_work", run: normalWork, filtered: "ok"},
	{name: "every_thread_filtered", run: everyThreadFiltered, filtered: "ok", unfiltered: "!ok"},
	{name: "exec_child_filtered", run: execChildFiltered, filtered: "ok", unfiltered: "!ok"},
	{name: "install_needs_no_new_privs", run: installWithoutNoNewPrivs, filtered: "ok", selfInstall: true},
}

// preInstallTIDs are the victim's threads before it installed the filter.
var preInstallTIDs []string

func victimMain(name string, filtered bool) int {
	var c *victimCase
	for i := range victimCases {
		if victimCases[i].name == name {
			c = &victimCases[i]
		}
	}
	if c == nil {
		fmt.Fprintf(os.Stderr, "no victim case %q\n", name)
		return 2
	}
	runtime.LockOSThread() // no_new_privs is per thread until Install spreads it
	if filtered {
		preInstallTIDs = taskIDs()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "set no_new_privs:", err)
			return 2
		}
		prog, err := Build(DefaultPolicy())
		if err == nil {
			err = Install(prog)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			return 2
		}
	}
	fmt.Printf("outcome=%s\n", c.run())
	return 0
}

func outcome(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return "errno:" + unix.ErrnoName(errno)
	}
	return "error:" + err.Error()
}

func signalName(s syscall.Signal) string { return unix.SignalName(s) }

// sys makes a raw system call; a successful call's result is discarded.
func sys(nr uintptr, args ...uintptr) func() string {
	return func() string {
		var a [6]uintptr
		copy(a[:], args)
		_, _, errno := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if errno != 0 {
			return outcome(errno)
		}
		return "ok"
	}
}

// sysClose is sys for calls that return a file descriptor, which it closes.
func sysClose(nr uintptr, args ...uintptr) func() string {
	return func() string {
		var a [6]uintptr
		copy(a[:], args)
		fd, _, errno := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if errno != 0 {
			return outcome(errno)
		}
		unix.Close(int(fd))
		return "ok"
	}
}

// socket passes family, type and protocol as full 64-bit registers, so a test can
// set bits the kernel ignores.
func socket(family, typ, proto uint64) func() string {
	return sysClose(unix.SYS_SOCKET, uintptr(family), uintptr(typ), uintptr(proto))
}

func closeIf(fd int, err error) {
	if err == nil {
		unix.Close(fd)
	}
}

// onPty runs f on the follower end of a new pseudo-terminal.
func onPty(f func(fd int) error) func() string {
	return func() string {
		leader, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "open /dev/ptmx: " + err.Error()
		}
		defer unix.Close(leader)
		if err := unix.IoctlSetPointerInt(leader, unix.TIOCSPTLCK, 0); err != nil {
			return "unlock pty: " + err.Error()
		}
		follower, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(leader), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
		if errno != 0 {
			return "open pty follower: " + errno.Error()
		}
		defer unix.Close(int(follower))
		return outcome(f(int(follower)))
	}
}

// cloneNewUserHighBits calls clone with CLONE_NEWUSER and a bit above 32 that
// the kernel drops. Should the filter let it through, the child leaves at once.
func cloneNewUserHighBits() string {
	flags := uintptr(1<<32 | unix.CLONE_NEWUSER | uintptr(unix.SIGCHLD))
	pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, flags, 0, 0, 0, 0, 0)
	if errno != 0 {
		return outcome(errno)
	}
	if pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	unix.Wait4(int(pid), &ws, 0, nil)
	return "ok"
}

// normalWork is what a build or a test run does: files, clocks, threads, pipes,
// loopback TCP (Go tries MPTCP first and must fall back), fork and exec.
func normalWork() string {
	p := filepath.Join(os.Getenv(victimDirEnv), "normal-"+strconv.Itoa(os.Getpid()))
	defer os.Remove(p)
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		return "write: " + err.Error()
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "hello" {
		return fmt.Sprintf("read back %q, %v", b, err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil || ts.Sec < 1_000_000_000 {
		return fmt.Sprintf("clock_gettime: %v %v", ts, err)
	}

	// Four goroutines each hold an OS thread until all have one: the runtime has
	// to clone new threads.
	const n = 4
	tids := make(chan int, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-release
		})
	}
	seen := map[int]bool{}
	for range n {
		seen[<-tids] = true
	}
	close(release)
	wg.Wait()
	if len(seen) != n {
		return fmt.Sprintf("goroutines shared threads: %v", seen)
	}

	r, w, err := os.Pipe()
	if err != nil {
		return "pipe: " + err.Error()
	}
	w.Write([]byte("x"))
	w.Close()
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "x" {
		return "pipe read " + string(b)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "listen: " + err.Error()
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("pong"))
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return "dial: " + err.Error()
	}
	b, err = io.ReadAll(c)
	c.Close()
	if string(b) != "pong" {
		return fmt.Sprintf("tcp read %q, %v", b, err)
	}

	if err := exec.Command("/bin/true").Run(); err != nil {
		return "exec /bin/true: " + err.Error()
	}
	return "ok"
}

// everyThreadFiltered checks that threads which existed before Install run under
// the filter and with no_new_privs too (SECCOMP_FILTER_FLAG_TSYNC).
func everyThreadFiltered() string {
	checked := 0
	for _, tid := range preInstallTIDs {
		b, err := os.ReadFile("/proc/self/task/" + tid + "/status")
		if err != nil {
			continue // the thread has exited
		}
		s := string(b)
		if !strings.Contains(s, "\nSeccomp:\t2\n") || !strings.Contains(s, "\nNoNewPrivs:\t1\n") {
			return "thread " + tid + " is not filtered"
		}
		checked++
	}
	if checked < 2 {
		return fmt.Sprintf("only %d threads from before Install to check", checked)
	}
	return "ok"
}

func execChildFiltered() string {
	out, err := exec.Command("/bin/cat", "/proc/self/status").Output()
	if err != nil {
		return "cat: " + err.Error()
	}
	if !strings.Contains(string(out), "\nSeccomp:\t2\n") || !strings.Contains(string(out), "\nSeccomp_filters:\t1\n") {
		return "child is not filtered"
	}
	return "ok"
}

// installWithoutNoNewPrivs: Install must refuse, even for root (who could load a
// filter without no_new_privs), and leave the process unfiltered.
func installWithoutNoNewPrivs() string {
	prog, err := Build(DefaultPolicy())
	if err != nil {
		return err.Error()
	}
	if err := Install(prog); !errors.Is(err, ErrNoNewPrivs) {
		return fmt.Sprintf("Install without no_new_privs: %v", err)
	}
	b, _ := os.ReadFile("/proc/self/status")
	if !strings.Contains(string(b), "\nSeccomp:\t0\n") {
		return "a filter was installed anyway"
	}
	return "ok"
}

func taskIDs() []string {
	ents, _ := os.ReadDir("/proc/self/task")
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}
