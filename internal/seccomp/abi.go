package seccomp

import "syscall"

// Linux x86_64 values the filter is written against. They are spelled out here
// rather than taken from golang.org/x/sys/unix so that the policy and the program are
// the same whatever GOOS builds them (darwin's errno and AF_ numbers differ);
// abi_linux_amd64_test.go checks each against unix.
const (
	auditArchX86_64 = 0xc000003e // AUDIT_ARCH_X86_64
	auditArchI386   = 0x40000003 // AUDIT_ARCH_I386, what int $0x80 reports
	x32SyscallBit   = 0x40000000 // __X32_SYSCALL_BIT

	retKillProcess = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno       = 0x00050000 // SECCOMP_RET_ERRNO; the errno is the low 16 bits
	retAllow       = 0x7fff0000 // SECCOMP_RET_ALLOW

	// Offsets into struct seccomp_data { int nr; __u32 arch; __u64
	// instruction_pointer; __u64 args[6]; }. x86_64 is little endian, so an
	// argument's low 32 bits come first.
	offNr   = 0
	offArch = 4
	offArgs = 16

	maxErrno = 4095 // MAX_ERRNO: larger SECCOMP_RET_ERRNO data is clamped by the kernel
	maxInsns = 4096 // BPF_MAXINSNS
)

const (
	errEPERM           = syscall.Errno(1)
	errENOSYS          = syscall.Errno(38)
	errEOPNOTSUPP      = syscall.Errno(95)
	errEPROTONOSUPPORT = syscall.Errno(93)
	errEAFNOSUPPORT    = syscall.Errno(97)
)

const (
	afUnix  = 1
	afInet  = 2
	afInet6 = 10

	sockTypeMask  = 0xf // SOCK_TYPE_MASK: the rest of type is SOCK_NONBLOCK|SOCK_CLOEXEC
	sockStream    = 1
	sockSeqpacket = 5
	sockPacket    = 10 // SOCK_PACKET: with AF_INET the kernel turns it into AF_PACKET

	ipprotoICMP   = 1
	ipprotoTCP    = 6
	ipprotoUDP    = 17
	ipprotoICMPv6 = 58
	ipprotoMPTCP  = 262
	ipprotoSMC    = 256

	tiocsti   = 0x5412 // TIOCSTI
	tioclinux = 0x541c // TIOCLINUX
	tiocsetd  = 0x5423 // TIOCSETD

	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	// cloneNewAny is every namespace flag. All of them live in the low 32 bits, and
	// clone(2) itself reads only lower_32_bits(flags) (kernel/fork.c).
	cloneNewAny = cloneNewTime | cloneNewNS | cloneNewCgroup | cloneNewUTS |
		cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	initPid       = 1 // the sandbox's init, pid 1 of its pid namespace
	prioUser      = 2 // PRIO_USER
	ioprioWhoUser = 3 // IOPRIO_WHO_USER (linux/ioprio.h; not in x/sys)

	perLinux     = 0x0000000
	perLinux32   = 0x0000008
	perUname26   = 0x0020000
	personaQuery = 0xffffffff // personality(0xffffffff) only reports the current persona
)
