package seccomp

import "syscall"

// maxReviewed is the highest x86_64 system call number DefaultPolicy was reviewed
// against (rseq_slice_yield, the last in golang.org/x/sys v0.50.0).
const maxReviewed = 471

// setIDBits are S_ISUID and S_ISGID.
const setIDBits = 0o6000

// DefaultPolicy is the filter every sandboxed command runs under. Rules are grouped
// by what they protect; each says why it exists. The whole list, with the errno of
// each entry, is documented in THREAT-MODEL.md.
func DefaultPolicy() Policy {
	r := make([]Rule, 0, 80)
	add := func(errno syscall.Errno, why string, names ...string) {
		for _, n := range names {
			r = append(r, Rule{Syscall: n, Action: ActionErrno, Errno: errno, Why: why})
		}
	}

	// Namespaces and mounts: the sandbox's namespaces and mount tree are fixed by
	// its init; a user namespace would hand the command CAP_SYS_ADMIN over fresh
	// namespaces and with it kernel code otherwise reserved for root.
	add(errEPERM, "creates namespaces; a user namespace opens root-only kernel code to the "+
		"sandbox (CVE-2022-0185 fsconfig overflow, CVE-2023-32233 nf_tables)", "unshare")
	add(errEPERM, "joins another namespace through a leaked fd, a way back to the host's", "setns")
	r = append(r, Rule{
		Syscall: "clone", Arg: argAnyBit(0, cloneNewAny), Action: ActionErrno, Errno: errEPERM,
		Why: "clone with a CLONE_NEW* flag creates namespaces, as unshare does; clone reads " +
			"only the low 32 bits of its flags, where every CLONE_NEW* flag lives",
	})
	add(errENOSYS, "clone3's flags sit in memory BPF cannot read; ENOSYS makes libc fall back "+
		"to clone, whose flags the filter checks", "clone3")
	add(errEPERM, "changes the mount tree: unmounting a cover exposes what it hides, a remount "+
		"drops read-only or nosuid", "mount", "umount2")
	add(errEPERM, "moves the root; only the sandbox init needs it (chroot plus a directory fd "+
		"is the classic chroot escape)", "pivot_root", "chroot")
	add(errEPERM, "new mount API: the power of mount(2) through other doors (CVE-2022-0185 was "+
		"reached through fsconfig; open_tree clones and mount_setattr reconfigures mounts)",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
		"open_tree_attr")

	// Other processes: reading or steering another sandboxed process (the init,
	// a harness, a tool server) is ptrace-level access.
	add(errEPERM, "reads and writes other processes' memory and registers; PTRACE_TRACEME was "+
		"CVE-2019-13272, and before Linux 4.8 a tracer could rewrite a call after seccomp "+
		"checked it", "ptrace")
	add(errEPERM, "reads or writes another process's memory, as ptrace does",
		"process_vm_readv", "process_vm_writev")
	add(errEPERM, "copies a file descriptor out of another process (ptrace-level access)",
		"pidfd_getfd")

	// The init (pid 1) of a sandbox whose user is the init's own (an unprivileged
	// agentbox maps one id) is the command's to steer: RLIMIT_NOFILE 8 or
	// RLIMIT_NPROC 0 on it breaks every later exec of an environment, RLIMIT_CPU 0
	// gets it killed, RLIMIT_AS is inherited by every later command, SCHED_IDLE and
	// nice 19 starve it. As root the init has a uid of its own and the kernel
	// refuses all of these anyway. Each call's pid (or process group) argument is
	// a plain int; 0, the caller itself, stays allowed.
	for _, name := range []string{"prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"} {
		r = append(r, Rule{Syscall: name, Arg: argIn(0, initPid), Action: ActionErrno, Errno: errEPERM,
			Why: "changes the limits or scheduling of pid 1, the sandbox's init, which every later command depends on"})
	}
	for _, name := range []string{"setpriority", "ioprio_set"} {
		r = append(r, Rule{Syscall: name, Arg: argIn(1, initPid), Action: ActionErrno, Errno: errEPERM,
			Why: "lowers the CPU or I/O priority of pid 1 (or its process group 1), the sandbox's init"})
	}
	r = append(r,
		Rule{Syscall: "setpriority", Arg: argIn(0, prioUser), Action: ActionErrno, Errno: errEPERM,
			Why: "PRIO_USER lowers the priority of every process of a uid, the init's too where it shares the command's"},
		Rule{Syscall: "ioprio_set", Arg: argIn(0, ioprioWhoUser), Action: ActionErrno, Errno: errEPERM,
			Why: "IOPRIO_WHO_USER sets the I/O priority of every process of a uid, the init's too where it shares the command's"},
	)

	// Kernel attack surface a coding agent does not need.
	add(errEPERM, "eBPF verifier bugs give kernel read/write (CVE-2021-3490, CVE-2022-23222)", "bpf")
	add(errEPERM, "large, bug-prone subsystem (CVE-2013-2094 local root) and a side channel on "+
		"other processes", "perf_event_open")
	add(errEPERM, "lets an exploit stall the kernel inside copy_from_user to win a race, a "+
		"standard step of use-after-free exploits", "userfaultfd")
	add(errEPERM, "io_uring performs I/O no system call filter sees and has a long CVE list "+
		"(CVE-2022-29582, CVE-2023-2598, CVE-2024-0582)",
		"io_uring_setup", "io_uring_enter", "io_uring_register")
	add(errEPERM, "keyrings are kernel state kept per uid, not per sandbox, behind a large API "+
		"with root exploits (CVE-2016-0728)", "keyctl", "add_key", "request_key")
	add(errENOSYS, "the LDT and 16-bit segments are x86 entry-code attack surface "+
		"(CVE-2017-17053); ENOSYS as on a kernel without CONFIG_MODIFY_LDT_SYSCALL", "modify_ldt")
	add(errENOSYS, "legacy library loader, gone from current kernels; old ones raced "+
		"(CVE-2004-1235)", "uselib")
	add(errENOSYS, "binary sysctl, removed in Linux 5.5; on older kernels a second, "+
		"unmaintained parser for every sysctl", "_sysctl")

	// Host administration. Each needs a capability the sandbox does not hold; the
	// rule is there in case one leaks in.
	add(errEPERM, "replaces the running kernel", "kexec_load", "kexec_file_load")
	add(errEPERM, "loads or unloads kernel code", "init_module", "finit_module", "delete_module")
	add(errEPERM, "reboots the host; in a pid namespace it kills the sandbox init", "reboot")
	add(errEPERM, "changes the host's swap", "swapon", "swapoff")
	add(errEPERM, "process accounting writes a record of every exit to a file", "acct")
	add(errEPERM, "changes filesystem quotas", "quotactl", "quotactl_fd")
	add(errEPERM, "raw I/O port access", "iopl", "ioperm")
	add(errEPERM, "the kernel log leaks kernel addresses (defeats KASLR) and the host's "+
		"messages", "syslog")
	add(errEPERM, "hangs up the terminal, which may be the user's", "vhangup")
	add(errEPERM, "the realtime clock is not namespaced: setting it moves the host's clock",
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex")
	add(errEPERM, "opens any file of a mounted filesystem by handle, past mount namespace "+
		"and path checks: the 2014 Shocker container escape", "open_by_handle_at")
	add(errEOPNOTSUPP, "makes the handles open_by_handle_at takes; EOPNOTSUPP as for a "+
		"filesystem without handles, which callers already expect", "name_to_handle_at")

	r = append(r, Rule{
		Syscall: "personality",
		Arg:     argNotIn(0, perLinux, perLinux32, perUname26, perLinux32|perUname26, personaQuery),
		Action:  ActionErrno, Errno: errEPERM,
		Why: "other personas turn off ASLR for exec'd programs (ADDR_NO_RANDOMIZE), make data " +
			"executable (READ_IMPLIES_EXEC) or map page zero (MMAP_PAGE_ZERO, CVE-2009-1895); " +
			"allowed as in Docker: query, PER_LINUX, PER_LINUX32 (setarch i686), UNAME26",
	})

	// Sockets: only Unix, IPv4 and IPv6. Every other family is its own rarely
	// audited stack, and many load a module on first use.
	r = append(r,
		Rule{
			Syscall: "socket", Arg: argNotIn(0, afUnix, afInet, afInet6),
			Action: ActionErrno, Errno: errEAFNOSUPPORT,
			Why: "other families are separate, exploit-rich stacks: AF_PACKET (CVE-2017-7308, " +
				"CVE-2020-14386), AF_NETLINK to nf_tables (CVE-2022-1015, CVE-2024-1086), " +
				"AF_VSOCK (CVE-2021-26708), AF_TIPC (CVE-2021-43267), AF_CAN (CVE-2021-3609)",
		},
		Rule{
			Syscall: "socket", Arg: &ArgCond{Index: 1, Op: In, Mask: sockTypeMask, Values: []uint32{sockPacket}},
			Action: ActionErrno, Errno: errEAFNOSUPPORT,
			Why: "the kernel turns socket(AF_INET, SOCK_PACKET) into an AF_PACKET socket, past " +
				"the family rule",
		},
		Rule{
			Syscall: "socket", Arg: argNotIn(2, 0, ipprotoICMP, ipprotoTCP, ipprotoUDP, ipprotoICMPv6),
			Action: ActionErrno, Errno: errEPROTONOSUPPORT,
			Why: "other protocols reach other stacks through AF_INET: MPTCP is a second, large " +
				"TCP stack, IPPROTO_SMC is AF_SMC, SCTP and L2TP load modules",
		},
		Rule{
			Syscall: "socketpair", Arg: argNotIn(0, afUnix, afInet, afInet6),
			Action: ActionErrno, Errno: errEAFNOSUPPORT,
			Why: "socketpair creates sockets of any family too (AF_TIPC supports it)",
		},
	)

	// Terminals: the sandbox may share a terminal with the user.
	r = append(r,
		Rule{
			Syscall: "ioctl", Arg: argIn(1, tiocsti), Action: ActionErrno, Errno: errEPERM,
			Why: "TIOCSTI types commands into the terminal's input, run by the user's shell " +
				"after the sandbox exits (CVE-2017-5226, CVE-2016-7545)",
		},
		Rule{
			Syscall: "ioctl", Arg: argIn(1, tioclinux), Action: ActionErrno, Errno: errEPERM,
			Why: "TIOCLINUX pastes the console selection into input, like TIOCSTI (CVE-2023-1523)",
		},
		Rule{
			Syscall: "ioctl", Arg: argIn(1, tiocsetd), Action: ActionErrno, Errno: errEPERM,
			Why: "TIOCSETD on a pty loads and exposes rarely used line disciplines " +
				"(CVE-2017-2636 n_hdlc double free)",
		},
	)

	return Policy{Rules: r, MaxSyscall: maxReviewed}
}

// WriteWorkspacePolicy is DefaultPolicy for a sandbox whose workspace is the host's own
// directory bound read-write (--write). Files there are written through an idmapped
// mount as the workspace's owner, often root: without these rules the sandbox could
// leave a set-user-ID root program in the host's workspace (measured: chmod 4755 works
// and the host sees -rwsr-xr-x root). The mode is a plain argument, so the filter sees
// the value the kernel uses. openat2 passes it in memory the filter cannot read: it
// gets ENOSYS, which makes callers fall back to openat. mkdir cannot set either bit.
//
// denyUnixSockets also refuses every Unix socket that could be aimed at a path: a
// pathname socket in the read-write workspace is the host's own (the network namespace
// does not cover it, and the kernel finds the listener by inode), and seccomp cannot
// read the path. The sandbox asks for this below Landlock ABI 9, which confines such
// connects itself. A connected stream or seqpacket pair cannot be re-aimed (EISCONN;
// seqpacket ignores a sendto address), so those pairs stay allowed; datagram ends can
// be re-aimed with connect or sendto. Anthropic's sandbox runtime denies socket(AF_UNIX)
// the same way on Linux.
func WriteWorkspacePolicy(denyUnixSockets bool) Policy {
	p := DefaultPolicy()
	why := "sets S_ISUID or S_ISGID on a file of the host's read-write workspace, owned " +
		"there by the workspace's owner (often root)"
	for _, c := range []struct {
		name string
		mode int
	}{
		{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
		{"open", 2}, {"openat", 3}, {"creat", 1}, {"mknod", 1}, {"mknodat", 2},
	} {
		p.Rules = append(p.Rules, Rule{
			Syscall: c.name, Arg: argAnyBit(c.mode, setIDBits), Action: ActionErrno, Errno: errEPERM, Why: why,
		})
	}
	p.Rules = append(p.Rules, Rule{Syscall: "openat2", Action: ActionErrno, Errno: errENOSYS,
		Why: "its mode is in memory the filter cannot read (see open)"})
	if denyUnixSockets {
		why := "a pathname Unix socket in the read-write workspace is the host's own " +
			"(the network namespace does not cover it); seccomp cannot read the path"
		p.Rules = append(p.Rules,
			Rule{Syscall: "socket", Arg: argIn(0, afUnix), Action: ActionErrno, Errno: errEPERM, Why: why},
			Rule{Syscall: "socketpair", Arg: &ArgCond{Index: 1, Op: NotIn, Mask: sockTypeMask,
				Values: []uint32{sockStream, sockSeqpacket}}, Action: ActionErrno, Errno: errEPERM,
				Why: why + "; a datagram end can be re-aimed at it with connect or sendto"},
		)
	}
	return p
}
