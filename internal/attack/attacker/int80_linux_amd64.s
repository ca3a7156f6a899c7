#include "textflag.h"

// func int80(nr, a1, a2, a3 uint32) uint32
// Enters the kernel through the i386 gate (int $0x80), which selects the 32-bit system
// call table and AUDIT_ARCH_I386 for seccomp.
TEXT ·int80(SB), NOSPLIT, $0-20
	MOVL nr+0(FP), AX
	MOVL a1+4(FP), BX
	MOVL a2+8(FP), CX
	MOVL a3+12(FP), DX
	INT  $0x80
	MOVL AX, ret+16(FP)
	RET
