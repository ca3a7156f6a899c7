package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestABIConstants checks the Linux values the policy spells out against
// golang.org/x/sys/unix on the platform they are for.
func TestABIConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		ours, sys uint64
	}{
		{"AUDIT_ARCH_X86_64", auditArchX86_64, unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_I386", auditArchI386, unix.AUDIT_ARCH_I386},
		{"SECCOMP_RET_KILL_PROCESS", retKillProcess, unix.SECCOMP_RET_KILL_PROCESS},
		{"SECCOMP_RET_ERRNO", retErrno, unix.SECCOMP_RET_ERRNO},
		{"SECCOMP_RET_ALLOW", retAllow, unix.SECCOMP_RET_ALLOW},
		{"EPERM", uint64(errEPERM), uint64(unix.EPERM)},
		{"ENOSYS", uint64(errENOSYS), uint64(unix.ENOSYS)},
		{"EOPNOTSUPP", uint64(errEOPNOTSUPP), uint64(unix.EOPNOTSUPP)},
		{"EPROTONOSUPPORT", uint64(errEPROTONOSUPPORT), uint64(unix.EPROTONOSUPPORT)},
		{"EAFNOSUPPORT", uint64(errEAFNOSUPPORT), uint64(unix.EAFNOSUPPORT)},
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"SOCK_PACKET", sockPacket, unix.SOCK_PACKET},
		{"IPPROTO_ICMP", ipprotoICMP, unix.IPPROTO_ICMP},
		{"IPPROTO_TCP", ipprotoTCP, unix.IPPROTO_TCP},
		{"IPPROTO_UDP", ipprotoUDP, unix.IPPROTO_UDP},
		{"IPPROTO_ICMPV6", ipprotoICMPv6, unix.IPPROTO_ICMPV6},
		{"IPPROTO_MPTCP", ipprotoMPTCP, unix.IPPROTO_MPTCP},
		{"IPPROTO_SMC", ipprotoSMC, unix.IPPROTO_SMC},
		{"PRIO_USER", prioUser, unix.PRIO_USER},
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"TIOCSETD", tiocsetd, unix.TIOCSETD},
		{"CLONE_NEWTIME", cloneNewTime, unix.CLONE_NEWTIME},
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"uprobe", uint64(sysnumX86_64["uprobe"]), unix.SYS_UPROBE},
		{"file_getattr", uint64(sysnumX86_64["file_getattr"]), unix.SYS_FILE_GETATTR},
		{"file_setattr", uint64(sysnumX86_64["file_setattr"]), unix.SYS_FILE_SETATTR},
		{"listns", uint64(sysnumX86_64["listns"]), unix.SYS_LISTNS},
		{"rseq_slice_yield (maxReviewed)", maxReviewed, unix.SYS_RSEQ_SLICE_YIELD},
	} {
		if c.ours != c.sys {
			t.Errorf("%s: ours %#x, x/sys %#x", c.name, c.ours, c.sys)
		}
	}
}
