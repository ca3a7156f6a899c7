package int80

// Syscall executes int $0x80 with eax=nr, ebx=a1, ecx=a2, edx=a3 and returns eax
// (a negative errno on failure, as the raw i386 ABI does).
func Syscall(nr, a1, a2, a3 uintptr) uintptr
