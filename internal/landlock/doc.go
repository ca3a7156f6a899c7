// Package landlock confines the sandbox init, and every process it starts, with the
// Landlock LSM: which file hierarchies may be read, executed or written, which TCP ports
// may be bound or connected, and whether signals and abstract unix sockets may reach
// processes outside the sandbox.
//
// The policy is data. [Ruleset] is validated by a pure function and converted to the
// access rights of one Landlock ABI by another pure function (table-tested for every
// ABI); [Restrict] and [Exec] are the small steps that install it with go-landlock.
// [Preview] reports what they would enforce without enforcing anything.
//
// # ABI levels
//
// [Restrict] and [Exec] use the best ABI the kernel offers ([ABI]) and handle every
// filesystem right of that ABI, so a newer kernel denies more, never less:
//
//	ABI 1  read, write, execute, list, create, remove; cross-directory rename and link
//	       are always denied
//	ABI 2  REFER: cross-directory rename and link, granted only inside ReadWrite
//	ABI 3  TRUNCATE, granted only inside ReadWrite and ReadWriteFiles
//	ABI 4  TCP bind and connect, denied unless a port is listed (or AllowAllTCP)
//	ABI 5  IOCTL_DEV: ioctl on device files opened once restricted, granted only in
//	       Terminals
//	ABI 6  scopes: signals and abstract unix sockets towards processes outside
//	ABI 9  RESOLVE_UNIX: connect to pathname unix sockets bound outside, granted nowhere
//
// [Applied] reports what was enforced, so the caller can record it or refuse to run.
//
// # Failing closed
//
// With no Landlock at all (ABI 0) [Restrict] and [Exec] return [ErrUnsupported] and
// change nothing, unless the ruleset sets BestEffort. Any ABI of 1 or more is used in full
// and never fails for lack of a feature: a missing feature shows up in [Applied]
// (for example Net or ScopeSignals false), and the caller decides whether that is
// acceptable. An invalid ruleset (relative or missing path, empty ReadExec) is an
// error whatever the ABI, with or without BestEffort.
//
// # Threads
//
// landlock_restrict_self applies to the calling thread only. [Restrict] (through
// go-landlock) covers the whole Go process: below ABI 8 it runs
// prctl(PR_SET_NO_NEW_PRIVS) and landlock_restrict_self on every OS thread through
// libpsx (syscall.AllThreadsSyscall with CGO_ENABLED=0; with cgo, libpsx signals every
// pthread); from ABI 8 it passes LANDLOCK_RESTRICT_SELF_TSYNC. Children inherit the
// domain of the thread that forked them.
//
// Below ABI 8 each thread thereby gets a domain of its own, with identical rules.
// That changes nothing for files and ports, but scopes then separate the threads:
// the restricted Go process may get EPERM signalling a child, or connecting to an
// abstract socket, created by another of its threads (go-landlock issue 36; the
// tests pin it). [Exec] avoids this: it restricts only the calling thread and execs
// at once, so the new program starts with a single domain. A sandbox init that must
// keep signalling its command after Restrict should start and signal it from one
// goroutine locked to its OS thread, or leave signalling to the host side, which is
// outside the domain.
//
// # What it does not do
//
// It does not mount, close file descriptors or filter syscalls. Landlock checks rights
// when a file is opened, so descriptors opened before [Restrict] keep their access; it
// does not restrict MPTCP sockets (the seccomp filter rejects IPPROTO_MPTCP), UDP, or
// raw sockets; and a restricted process cannot mount, so all mounts come first.
package landlock
