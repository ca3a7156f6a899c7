package seccomp

import (
	"syscall"
	"testing"
)

// TestDefaultFilter runs the default program on calls whose verdict is written out
// by hand, with raw x86_64 numbers and Linux constants, so it does not trust the
// policy data to describe itself.
func TestDefaultFilter(t *testing.T) {
	prog, err := Build(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	vm := newFilterVM(t, prog)

	const (
		high     = 0xdead_beef_0000_0000 // bits the kernel drops from a 32-bit argument
		sigchld  = 17
		goThread = 0x50f00 // CLONE_VM|FS|FILES|SIGHAND|SYSVSEM|THREAD, as the Go runtime
		vfork    = 0x4100 | sigchld
	)
	i386 := func(nr uint32) seccompData { d := call(nr); d.arch = auditArchI386; return d }
	eperm, enosys := errno(1), errno(38)

	tests := []struct {
		name string
		d    seccompData
		want uint32
	}{
		{"read", call(0, 0, 0, 10), allow},
		{"write", call(1, 1, 0, 10), allow},
		{"openat", call(257, 0xffffff9c, 0, 0), allow},
		{"getpid", call(39), allow},
		{"execve", call(59), allow},
		{"seccomp may stack filters", call(317), allow},
		{"rseq_slice_yield, the last reviewed", call(471), allow},

		// The ABI checks come before anything else.
		{"i386 getpid via int 0x80", i386(20), kill},
		{"i386 number of ptrace", i386(26), kill},
		{"i386 read", i386(3), kill},
		{"arch 0", func() seccompData { d := call(0); d.arch = 0; return d }(), kill},
		{"aarch64 arch", func() seccompData { d := call(0); d.arch = 0xc00000b7; return d }(), kill},
		{"x32 getpid", call(0x40000000 | 39), kill},
		{"x32 ptrace", call(0x40000000 | 101), kill},
		{"x32-only number 512", call(0x40000000 | 512), kill},
		{"x32 bit alone", call(0x40000000), kill},
		{"negative number", call(0x80000000), kill},
		{"-1, a tracer's skip", call(0xffffffff), allow},
		{"above reviewed", call(472), enosys},
		{"far above reviewed", call(0x3fffffff), enosys},

		{"ptrace", call(101, 0), eperm},
		{"ptrace, ip ignored", func() seccompData { d := call(101); d.ip = 0; return d }(), eperm},
		{"process_vm_readv", call(310), eperm},
		{"process_vm_writev", call(311), eperm},
		{"pidfd_getfd", call(438), eperm},
		{"prlimit64 on pid 1", call(302, 1, 7), eperm},
		{"prlimit64 on pid 1, high bits", call(302, high|1, 7), eperm},
		{"prlimit64 on itself", call(302, 0, 7), allow},
		{"prlimit64 on pid 2", call(302, 2, 7), allow},
		{"sched_setaffinity on pid 1", call(203, 1), eperm},
		{"sched_setaffinity on itself", call(203, 0), allow},
		{"sched_setscheduler on pid 1", call(144, 1), eperm},
		{"sched_setparam on pid 1", call(142, 1), eperm},
		{"sched_setattr on pid 1", call(314, 1), eperm},
		{"sched_setattr on itself", call(314, 0), allow},
		{"setpriority PRIO_PROCESS pid 1", call(141, 0, 1, 19), eperm},
		{"setpriority PRIO_PGRP 1", call(141, 1, 1, 19), eperm},
		{"setpriority PRIO_USER", call(141, 2, 0, 19), eperm},
		{"setpriority PRIO_USER, high bits", call(141, high|2, 1000, 19), eperm},
		{"setpriority on itself", call(141, 0, 0, 19), allow},
		{"setpriority PRIO_PROCESS pid 2", call(141, 0, 2, 19), allow},
		{"ioprio_set IOPRIO_WHO_PROCESS pid 1", call(251, 1, 1), eperm},
		{"ioprio_set IOPRIO_WHO_USER", call(251, 3, 1000), eperm},
		{"ioprio_set on itself", call(251, 1, 0), allow},
		{"getpriority pid 1", call(140, 0, 1), allow},
		{"mount", call(165), eperm},
		{"umount2", call(166), eperm},
		{"open_tree", call(428), eperm},
		{"move_mount", call(429), eperm},
		{"fsopen", call(430), eperm},
		{"fsconfig", call(431), eperm},
		{"fsmount", call(432), eperm},
		{"fspick", call(433), eperm},
		{"mount_setattr", call(442), eperm},
		{"open_tree_attr", call(467), eperm},
		{"pivot_root", call(155), eperm},
		{"chroot", call(161), eperm},
		{"unshare 0", call(272, 0), eperm},
		{"unshare CLONE_NEWUSER", call(272, 0x10000000), eperm},
		{"setns", call(308), eperm},
		{"clone3", call(435), enosys},
		{"keyctl", call(250), eperm},
		{"add_key", call(248), eperm},
		{"request_key", call(249), eperm},
		{"bpf", call(321), eperm},
		{"perf_event_open", call(298), eperm},
		{"userfaultfd", call(323), eperm},
		{"io_uring_setup", call(425), eperm},
		{"io_uring_enter", call(426), eperm},
		{"io_uring_register", call(427), eperm},
		{"kexec_load", call(246), eperm},
		{"kexec_file_load", call(320), eperm},
		{"init_module", call(175), eperm},
		{"finit_module", call(313), eperm},
		{"delete_module", call(176), eperm},
		{"swapon", call(167), eperm},
		{"swapoff", call(168), eperm},
		{"reboot", call(169), eperm},
		{"acct", call(163), eperm},
		{"quotactl", call(179), eperm},
		{"quotactl_fd", call(443), eperm},
		{"open_by_handle_at", call(304), eperm},
		{"name_to_handle_at", call(303), errno(95)},
		{"iopl", call(172), eperm},
		{"ioperm", call(173), eperm},
		{"syslog", call(103), eperm},
		{"vhangup", call(153), eperm},
		{"settimeofday", call(164), eperm},
		{"clock_settime", call(227), eperm},
		{"clock_adjtime", call(305), eperm},
		{"adjtimex", call(159), eperm},
		{"modify_ldt", call(154), enosys},
		{"uselib", call(134), enosys},
		{"_sysctl", call(156), enosys},

		{"clone fork", call(56, sigchld), allow},
		{"clone Go thread", call(56, goThread), allow},
		{"clone vfork+pidfd", call(56, vfork|0x1000), allow},
		{"clone high bits only", call(56, 1<<32|sigchld), allow},
		{"clone CLONE_NEWUSER", call(56, 0x10000000|sigchld), eperm},
		{"clone CLONE_NEWNS", call(56, 0x20000|sigchld), eperm},
		{"clone CLONE_NEWUTS", call(56, 0x04000000), eperm},
		{"clone CLONE_NEWIPC", call(56, 0x08000000), eperm},
		{"clone CLONE_NEWPID", call(56, 0x20000000), eperm},
		{"clone CLONE_NEWNET", call(56, 0x40000000), eperm},
		{"clone CLONE_NEWCGROUP", call(56, 0x02000000), eperm},
		{"clone CLONE_NEWTIME", call(56, 0x80), eperm},
		{"clone CLONE_NEWUSER, high bits set", call(56, high|0x10000000|sigchld), eperm},
		{"clone Go thread + CLONE_NEWNET", call(56, goThread|0x40000000), eperm},
		{"fork is not clone", call(57), allow},
		{"vfork is not clone", call(58), allow},

		{"socket unix", call(41, 1, 1, 0), allow},
		{"socket inet tcp", call(41, 2, 1, 6), allow},
		{"socket inet6 udp", call(41, 10, 2, 17), allow},
		{"socket ping", call(41, 2, 2, 1), allow},
		{"socket ping6", call(41, 10, 2, 58), allow},
		{"socket inet cloexec|nonblock", call(41, 2, 0x80801, 0), allow},
		{"socket inet, high bits the kernel drops", call(41, high|2, high|1, high|6), allow},
		{"socket netlink", call(41, 16, 3, 0), errno(97)},
		{"socket packet", call(41, 17, 3, 0x300), errno(97)},
		{"socket vsock", call(41, 40, 1, 0), errno(97)},
		{"socket alg", call(41, 38, 5, 0), errno(97)},
		{"socket family 0", call(41, 0, 1, 0), errno(97)},
		{"socket netlink with high bits", call(41, high|16, 3, 0), errno(97)},
		{"socket netlink hidden as 1<<32|16", call(41, 1<<32|16, 3, 0), errno(97)},
		{"socket inet SOCK_PACKET", call(41, 2, 10, 0), errno(97)},
		{"socket inet SOCK_PACKET|SOCK_CLOEXEC", call(41, 2, 0x80000|10, 0), errno(97)},
		{"socket inet mptcp", call(41, 2, 1, 262), errno(93)},
		{"socket inet6 mptcp", call(41, 10, 1, 262), errno(93)},
		{"socket mptcp with high bits", call(41, 2, 1, high|262), errno(93)},
		{"socket inet smc", call(41, 2, 1, 256), errno(93)},
		{"socket inet sctp", call(41, 2, 1, 132), errno(93)},
		{"socket raw", call(41, 2, 3, 255), errno(93)},
		{"socketpair unix", call(53, 1, 1, 0), allow},
		{"socketpair tipc", call(53, 30, 5, 0), errno(97)},

		{"ioctl TCGETS", call(16, 0, 0x5401), allow},
		{"ioctl TIOCGWINSZ", call(16, 0, 0x5413), allow},
		{"ioctl FIONREAD", call(16, 0, 0x541b), allow},
		{"ioctl TIOCSTI", call(16, 0, 0x5412), eperm},
		{"ioctl TIOCSTI|1<<32", call(16, 0, 1<<32|0x5412), eperm},
		{"ioctl TIOCSTI with all high bits", call(16, 0, 0xffffffff_00005412), eperm},
		{"ioctl TIOCLINUX", call(16, 0, 0x541c), eperm},
		{"ioctl TIOCSETD", call(16, 0, high|0x5423), eperm},
		{"ioctl TIOCSTI as fd, not cmd", call(16, 0x5412, 0x5401), allow},

		{"personality PER_LINUX", call(135, 0), allow},
		{"personality query", call(135, 0xffffffff), allow},
		{"personality query, 64-bit -1", call(135, 0xffffffff_ffffffff), allow},
		{"personality PER_LINUX32", call(135, 8), allow},
		{"personality UNAME26", call(135, 0x20000), allow},
		{"personality ADDR_NO_RANDOMIZE", call(135, 0x0040000), eperm},
		{"personality READ_IMPLIES_EXEC", call(135, 0x0400000), eperm},
		{"personality MMAP_PAGE_ZERO", call(135, 0x0100000), eperm},
		{"personality ADDR_NO_RANDOMIZE, high bits", call(135, high|0x0040000), eperm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := vm.run(t, tt.d); got != tt.want {
				t.Errorf("%v: got %s, want %s", tt.d, verdict(got), verdict(tt.want))
			}
		})
	}
}

// With --write, no call may give a workspace file a set-ID bit: the attacker suite
// planted a setuid-root program in a root-owned host workspace before this policy.
func TestWriteWorkspacePolicy(t *testing.T) {
	def, err := Build(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	wr, err := Build(WriteWorkspacePolicy(true))
	if err != nil {
		t.Fatal(err)
	}
	dvm, wvm := newFilterVM(t, def), newFilterVM(t, wr)
	nr := func(name string) uint32 { return sysnumX86_64[name] }
	for _, tc := range []struct {
		name string
		d    seccompData
		want uint32
	}{
		{"chmod 4755", call(nr("chmod"), 0, 0o4755), errno(syscall.EPERM)},
		{"chmod 2755 with high bits", call(nr("chmod"), 0, 1<<32|0o2755), errno(syscall.EPERM)},
		{"fchmodat 6755", call(nr("fchmodat"), 0, 0, 0o6755), errno(syscall.EPERM)},
		{"fchmodat2 4700", call(nr("fchmodat2"), 0, 0, 0o4700), errno(syscall.EPERM)},
		{"openat O_CREAT 4755", call(nr("openat"), 0, 0, 0o100, 0o4755), errno(syscall.EPERM)},
		{"mknodat 4644", call(nr("mknodat"), 0, 0, 0o104644), errno(syscall.EPERM)},
		{"openat2", call(nr("openat2"), 0, 0, 0, 24), errno(syscall.ENOSYS)},
		{"socket AF_UNIX", call(nr("socket"), 1, 1, 0), errno(syscall.EPERM)},
		{"socketpair AF_UNIX dgram", call(nr("socketpair"), 1, 2, 0), errno(syscall.EPERM)},
		{"socketpair AF_UNIX stream allowed", call(nr("socketpair"), 1, 1|0o2000000, 0), allow},
		{"chmod 0755 allowed", call(nr("chmod"), 0, 0o755), allow},
		{"openat 0644 allowed", call(nr("openat"), 0, 0, 0o100, 0o644), allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wvm.run(t, tc.d); got != tc.want {
				t.Fatalf("write policy: %s, want %s", verdict(got), verdict(tc.want))
			}
			if got := dvm.run(t, tc.d); got != allow {
				t.Fatalf("default policy: %s, want allow", verdict(got))
			}
		})
	}
}
