package nsinit

import "golang.org/x/sys/unix"

// InitCaps are the capabilities the host raises as ambient capabilities for the
// init, so they survive its execve as uid 1000: mounting, pivot_root, sethostname and
// the cgroup namespace (SYS_ADMIN), bringing up lo (NET_ADMIN), dropping the bounding
// set (SETPCAP), and DAC_OVERRIDE, without which the overlay mount fails with EACCES
// (overlayfs creates its work/work directory with mode 0 and works inside it with the
// mounter's credentials; measured on 6.18). All of them count only in the sandbox's
// user namespace, so only for files owned by the sandbox's host uid. Without ambient
// capabilities a non-root execve clears every capability, even in a fresh user
// namespace.
func InitCaps() []uintptr {
	return []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_DAC_OVERRIDE}
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

// dropCaps empties every capability set: the bounding set first (while SETPCAP is
// still held), then inheritable, permitted and effective on every thread with one
// capset, which also clears the ambient set (the kernel keeps only ambient bits that
// stay both permitted and inheritable). It then makes the init non-dumpable, so
// sandboxed code (same uid) can open neither /proc/1/mem nor /proc/1/exe: the
// CVE-2019-5736 path to overwriting the agentbox binary.
//
// The bounding set is dropped on this thread only, the one that starts the command:
// it takes one prctl per capability, and 41 all-thread calls (each stops the world
// and signals every thread) measured 6 to 60 ms here, more than everything else in
// the init together. It changes nothing for the other threads: the bounding set only
// caps what execve can grant, those threads never call execve, hold no capability
// and get no_new_privs, and uid 1000 gains none at execve anyway.
func dropCaps() error {
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return atf(err, "drop bounding capability %d", c)
		}
	}
	if err := capsetZeroAllThreads(); err != nil {
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
