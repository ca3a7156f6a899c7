// Package seccomp builds and installs agentbox's system call filter for x86_64.
//
// The policy is data (DefaultPolicy): a default-allow list of denied system calls,
// each with an optional condition on one argument, the errno it returns, and why it
// is there. Build turns a Policy into a classic BPF program with no system calls and
// no global state, so it is table-tested and fuzzed without privilege. Install is the
// separate, small step that loads a program into the kernel for every thread of the
// calling process.
//
// Every program Build emits first kills the process unless the call uses the native
// x86_64 ABI: a foreign audit arch (i386 through int $0x80 or a 32-bit code segment)
// or an x32 system call number (bit 0x40000000) ends the process with SIGSYS, because
// their numbers mean different calls and would walk around the deny list. Argument
// conditions compare the low 32 bits only, which is what the kernel itself reads for
// every argument the default policy inspects; a filter that compared all 64 bits
// would be bypassed by setting a high bit the kernel ignores.
//
// The package deliberately does not: allow-list (a coding agent runs arbitrary
// tools, so the list names what to deny); inspect pointer arguments (BPF cannot
// dereference them, so path, clone3 and sockaddr contents are out of reach);
// support any other architecture (Install refuses on anything but linux/amd64); or
// set no_new_privs (the caller does that, and Install checks it).
//
// The program is built with the golang.org/x/net/bpf assembler rather than
// github.com/elastic/go-seccomp-bpf, whose policy cannot express it: on a foreign
// arch that library jumps to the policy's default action (allow, for a deny list),
// its argument comparisons always include the high 32 bits, and its errno action
// has no errno of its own (it means EPERM).
package seccomp
