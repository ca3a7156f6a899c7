package main

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	register("iouring", ioUring)
	register("compat", compat)
	register("userns", userns)
	register("mount", mountAttempts)
}

// ioUring tries to create an io_uring: its operations bypass the system-call filter
// (the ring executes openat, connect, … without a syscall per operation), which is why
// Codex, Anthropic's runtime and isolate all deny it.
//
// Attempts: "setup", "enter", "register".
func ioUring(args []string) {
	fd, err := ioUringSetup(8)
	if err == nil {
		unix.Close(fd)
	}
	report("setup", err, "io_uring fd %d", fd)
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, ^uintptr(0), 0, 0, 0, 0, 0)
	report("enter", errnoOf(e), "io_uring_enter accepted")
	_, _, e = unix.Syscall6(unix.SYS_IO_URING_REGISTER, ^uintptr(0), 0, 0, 0, 0, 0)
	report("register", errnoOf(e), "io_uring_register accepted")
}

// i386 and x32 numbers used by compat.
const (
	x32Bit          = 0x40000000
	i386Getpid      = 20
	i386Socketcall  = 102
	i386Unshare     = 310
	i386IoUringSet  = 425
	x8664Getpid     = 39
	x8664Unshare    = 272
	x8664IoUringSet = 425
)

// compat enters the kernel through a foreign system-call ABI: the i386 table through
// int $0x80 or the x32 table through numbers with bit 30 set. A filter that checks only
// x86_64 numbers (Codex's gap) lets either through. One attempt per process, because
// the expected outcome is death by SIGSYS; an ATTEMPT line precedes the call.
//
//	compat i386|x32 getpid|unshare|socketcall|io_uring
func compat(args []string) {
	if len(args) != 2 {
		usage()
	}
	name := args[0] + ":" + args[1]
	if !haveCompat {
		fail(name, unix.ENOSYS)
		return
	}
	attemptLine(name)
	switch args[0] {
	case "i386":
		var r uint32
		switch args[1] {
		case "getpid":
			r = int80(i386Getpid, 0, 0, 0)
		case "unshare":
			r = int80(i386Unshare, unix.CLONE_NEWUSER, 0, 0)
		case "io_uring":
			page, addr, err := mmap32()
			if err != nil {
				fail(name, err)
				return
			}
			r = int80(i386IoUringSet, 8, uint32(addr), 0)
			unix.Munmap(page)
		case "socketcall":
			page, addr, err := mmap32()
			if err != nil {
				fail(name, err)
				return
			}
			// socketcall(SYS_SOCKET, {AF_NETLINK, SOCK_RAW, NETLINK_ROUTE})
			putU32(page, 0, unix.AF_NETLINK)
			putU32(page, 4, unix.SOCK_RAW)
			putU32(page, 8, unix.NETLINK_ROUTE)
			r = int80(i386Socketcall, 1, uint32(addr), 0)
			unix.Munmap(page)
		default:
			usage()
		}
		if int32(r) < 0 && int32(r) > -4096 {
			fail(name, unix.Errno(-int32(r)))
			return
		}
		ok(name, "i386 call returned %d", int32(r))
	case "x32":
		var nr, a1, a2 uintptr
		switch args[1] {
		case "getpid":
			nr = x32Bit | x8664Getpid
		case "unshare":
			nr, a1 = x32Bit|x8664Unshare, unix.CLONE_NEWUSER
		case "io_uring":
			nr, a1, a2 = x32Bit|x8664IoUringSet, 8, 0 // NULL params: EFAULT if it ever ran
		default:
			usage()
		}
		r, _, e := unix.RawSyscall(nr, a1, a2, 0)
		if e != 0 {
			fail(name, e)
			return
		}
		ok(name, "x32 call returned %d", r)
	default:
		usage()
	}
}

// userns tries to create namespaces from inside: a nested user namespace gives back
// every capability inside it, the base of most kernel exploits from sandboxes; the
// other namespaces would let the process remount its view.
//
// Attempts: "clone:newuser" (clone), "clone3:newuser" (clone3), "unshare:newuser"
// (unshare in a single-threaded child), "unshare:newns|newnet|newpid|newipc|newuts",
// "unshare-thread:newuser" (unshare in this multi-threaded process; EINVAL from the
// kernel is not a denial), "unshare-bin" (/usr/bin/unshare -U /bin/true).
func userns(args []string) {
	run := func(name string, attr *syscall.SysProcAttr) {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = attr
		err := cmd.Run()
		var errno syscall.Errno
		if e, isErrno := errorAsErrno(err); isErrno {
			errno = e
		}
		switch {
		case err == nil:
			ok(name, "child ran in the new namespace")
		case errno != 0:
			fail(name, errno)
		default:
			fail(name, err)
		}
	}
	run("clone:newuser", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER})
	run("clone3:newuser", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWTIME})
	run("unshare:newuser", &syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWUSER})
	for _, ns := range []struct {
		name string
		flag uintptr
	}{
		{"newns", unix.CLONE_NEWNS}, {"newnet", unix.CLONE_NEWNET}, {"newpid", unix.CLONE_NEWPID},
		{"newipc", unix.CLONE_NEWIPC}, {"newuts", unix.CLONE_NEWUTS}, {"newcgroup", unix.CLONE_NEWCGROUP},
	} {
		run("unshare:"+ns.name, &syscall.SysProcAttr{Unshareflags: ns.flag})
	}
	report("unshare-thread:newuser", unix.Unshare(unix.CLONE_NEWUSER), "unshare succeeded")
	if _, err := os.Stat("/usr/bin/unshare"); err != nil {
		fail("unshare-bin", err)
		return
	}
	cmd := exec.Command("/usr/bin/unshare", "-U", "/bin/true")
	out, err := cmd.CombinedOutput()
	report("unshare-bin", err, "unshare -U exited 0: %s", out)
}

// mountAttempts tries to change the mount table from inside: remount the read-only
// root or /usr writable, unmount /proc (which would uncover a masked path), mount a
// fresh file system, pivot_root and chroot, the new mount API, and joining pid 1's
// mount namespace.
func mountAttempts(args []string) {
	if refuseOnHost("mount") {
		return
	}
	report("remount-root-rw", unix.Mount("", "/", "", unix.MS_REMOUNT, ""), "remounted / rw")
	report("remount-root-bind-rw", unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND, ""), "remounted / rw")
	report("remount-usr-rw", unix.Mount("", "/usr", "", unix.MS_REMOUNT|unix.MS_BIND, ""), "remounted /usr rw")
	report("remount-workspace-rw", unix.Mount("", "/workspace", "", unix.MS_REMOUNT, ""), "remounted /workspace")
	report("mount-tmpfs", unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""), "mounted a tmpfs on /tmp")
	report("mount-proc", unix.Mount("proc", "/tmp", "proc", 0, ""), "mounted a fresh procfs")
	report("bind-root", unix.Mount("/", "/tmp", "", unix.MS_BIND|unix.MS_REC, ""), "bind-mounted /")
	report("umount-proc", unix.Unmount("/proc", unix.MNT_DETACH), "unmounted /proc")
	report("umount-usr", unix.Unmount("/usr", unix.MNT_DETACH), "unmounted /usr")
	report("make-shared", unix.Mount("", "/", "", unix.MS_SHARED|unix.MS_REC, ""), "made / shared")
	report("pivot-root", unix.PivotRoot("/tmp", "/tmp"), "pivot_root succeeded")
	report("chroot", unix.Chroot("/tmp"), "chroot succeeded")
	fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	report("fsopen", err, "fsopen succeeded")
	fd, err = unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	report("open-tree-clone", err, "open_tree clone succeeded")
	if fd, err := unix.Open("/proc/1/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		fail("setns-mnt", err)
	} else {
		report("setns-mnt", unix.Setns(fd, unix.CLONE_NEWNS), "joined pid 1's mount namespace")
		unix.Close(fd)
	}
}
