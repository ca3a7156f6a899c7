// Package int80 makes a system call through the legacy 32-bit gate, int $0x80, from
// a 64-bit process. It exists only for the seccomp package's tests: the kernel
// reports such a call with AUDIT_ARCH_I386 and i386 numbers, and the filter must
// kill it. It is not for real use: pointers would be cut to 32 bits, and only amd64
// has it.
package int80
