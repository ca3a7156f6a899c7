package nsinit

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitCaps are the capabilities the host raises as ambient capabilities for an init
// that runs as the sandbox user (an unprivileged agentbox maps one id; as root the
// init is uid 0 of its user namespace and gets all of them at execve), so they
// survive its execve as uid 1000: mounting, pivot_root, sethostname and
// the cgroup namespace (SYS_ADMIN), bringing up lo (NET_ADMIN), dropping the bounding
// set (SETPCAP), setting the offsets of the sandbox's time namespace (SYS_TIME), and
// DAC_OVERRIDE, without which the overlay mount fails with EACCES
// (overlayfs creates its work/work directory with mode 0 and works inside it with the
// mounter's credentials; measured on 6.18). All of them count only in the sandbox's
// user namespace, so only for files owned by the sandbox's host uid. Without ambient
// capabilities a non-root execve clears every capability, even in a fresh user
// namespace.
func InitCaps() []uintptr {
	return []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_TIME, unix.CAP_DAC_OVERRIDE}
}

// lastCap finds the highest capability this kernel knows, by asking for bounding set
// entries until the kernel says EINVAL.
func lastCap() int {
	c := 0
	for ; c < 64; c++ {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil {
			break
		}
	}
	return c - 1
}

// keptCaps are the capabilities an init of its own uid keeps once set up, to start
// and steer commands of another uid: SETUID and SETGID to give a forked child the
// sandbox user's ids, SYS_RESOURCE to prlimit a command after its execve, KILL to
// signal and kill commands. All count only in the sandbox's user namespace (raising
// a hard limit takes SYS_RESOURCE in the host's), and the init runs nothing but its
// own code: the commands, of another uid, can neither ptrace it nor read its memory.
// An init that runs as the sandbox user itself keeps none.
func keptCaps() uint64 {
	if os.Getuid() == UID {
		return 0
	}
	kept := uint64(1<<unix.CAP_KILL | 1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID | 1<<unix.CAP_SYS_RESOURCE)
	if buildRoot {
		kept |= BuildCaps
	}
	return kept
}

// BuildCaps are what the commands of a build sandbox (Image.Build) hold as root
// of its user namespace: what dpkg, apt and package scripts need to own, chmod
// and read the files they install and to drop to a package's user (container
// runtimes' default set, without NET_RAW, MKNOD and AUDIT_WRITE). They count only
// in that namespace, whose ids are the image's (the foreign range on the host),
// and the seccomp filter still denies mount, set-ID device nodes and the rest.
const BuildCaps = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID |
	1<<unix.CAP_KILL | 1<<unix.CAP_SETGID | 1<<unix.CAP_SETUID | 1<<unix.CAP_SETPCAP |
	1<<unix.CAP_NET_BIND_SERVICE | 1<<unix.CAP_SYS_CHROOT | 1<<unix.CAP_SETFCAP

// buildRoot is set once, before any command starts, for a build sandbox: its
// commands run as root with BuildCaps instead of as the sandbox user.
var buildRoot bool

// commandCred is the identity of the commands the init starts: the sandbox user
// with no supplementary group, or nil when the init already is that user (an
// unprivileged agentbox maps one id only). An init of another uid is out of the
// commands' reach: the kernel refuses them prlimit, setpriority, sched_setaffinity,
// ioprio_set, kill and pidfd_send_signal on it, and its /proc files.
func commandCred() *syscall.Credential {
	if buildRoot {
		return &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	}
	if os.Getuid() == UID {
		return nil
	}
	return &syscall.Credential{Uid: UID, Gid: GID, Groups: []uint32{}}
}

// asCommandUser runs fn with the commands' file system identity on this thread, so
// that the checks the init makes before starting a command (its working directory,
// its executable) see what the command itself will see. The init holds no
// capability that overrides file permissions by then.
func asCommandUser(fn func() error) error {
	if os.Getuid() == UID || buildRoot {
		return fn()
	}
	if err := unix.Setfsgid(GID); err != nil {
		return at("setfsgid", err)
	}
	if err := unix.Setfsuid(UID); err != nil {
		return at("setfsuid", err)
	}
	defer func() {
		_ = unix.Setfsuid(os.Getuid())
		_ = unix.Setfsgid(os.Getgid())
	}()
	return fn()
}

// dropCaps empties the bounding set (while SETPCAP is still held), then sets
// inheritable, permitted and effective on every thread with one capset to keptCaps,
// which also clears the ambient set (the kernel keeps only ambient bits that stay
// both permitted and inheritable). It then makes the init non-dumpable, so sandboxed
// code can open neither /proc/1/mem nor /proc/1/exe: the CVE-2019-5736 path to
// overwriting the agentbox binary.
//
// The bounding set is dropped on this thread only, the one that starts the command:
// it takes one prctl per capability, and 41 all-thread calls (each stops the world
// and signals every thread) measured 6 to 60 ms here, more than everything else in
// the init together. It changes nothing for the other threads: the bounding set only
// caps what execve can grant, those threads never call execve, hold no capability
// a command could use and get no_new_privs, and uid 1000 gains none at execve anyway.
func dropCaps() error {
	// lastCap asks the kernel up to 64 times: once, not on every iteration (which
	// made this loop ~1,700 prctl calls).
	last := lastCap()
	for c := 0; c <= last; c++ {
		if buildRoot && BuildCaps&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return atf(err, "drop bounding capability %d", c)
		}
	}
	if err := capsetAllThreads(keptCaps()); err != nil {
		return at("capset", err)
	}
	return at("prctl PR_SET_DUMPABLE", unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0))
}

// setNoNewPrivs sets no_new_privs: no setuid or file-capability binary can raise
// privileges, and Landlock and seccomp can be installed without CAP_SYS_ADMIN. It is
// set here on this thread; Landlock's restrict (on every thread) and seccomp's
// SECCOMP_FILTER_FLAG_TSYNC (which copies it with the filter) set it on the others.
func setNoNewPrivs() error {
	return at("prctl PR_SET_NO_NEW_PRIVS", unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
}

// effectiveCaps returns the calling thread's effective capability set.
func effectiveCaps() uint64 {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32
}
