package seccomp

import (
	"fmt"
	"syscall"
)

// Policy is a default-allow filter: after the ABI checks every program starts with
// (see Build), a call that no Rule matches is allowed. The zero Policy keeps only
// those checks.
type Policy struct {
	// Rules are tried in order for a call's number; the first match decides.
	Rules []Rule

	// MaxSyscall is the highest x86_64 system call number the policy was reviewed
	// against. Larger numbers (calls added to Linux since) fail with ENOSYS, as on
	// an older kernel, so a new kernel cannot widen the sandbox. 0 turns this off.
	MaxSyscall uint32
}

// Rule is one entry of the policy: a system call, an optional condition on one of
// its arguments, the action, and why.
type Rule struct {
	Syscall string        // x86_64 name, as in the kernel's syscall_64.tbl
	Arg     *ArgCond      // nil: every call of Syscall matches
	Action  Action        // what a matching call gets
	Errno   syscall.Errno // Linux errno for ActionErrno, 1..4095
	Why     string        // the attack or bug it stops; shown in docs and tests
}

// Action is what a matching call gets. The zero value returns an errno.
type Action uint8

const (
	// ActionErrno fails the call with Rule.Errno without running it.
	ActionErrno Action = iota
	// ActionKill kills the whole process with SIGSYS (SECCOMP_RET_KILL_PROCESS).
	ActionKill
)

func (a Action) String() string {
	switch a {
	case ActionErrno:
		return "errno"
	case ActionKill:
		return "kill"
	}
	return fmt.Sprintf("Action(%d)", a)
}

// ArgCond is a condition on one argument. It looks only at the argument's low 32
// bits, masked with Mask:
//
//	In:    low32(args[Index]) & Mask is one of Values
//	NotIn: low32(args[Index]) & Mask is none of Values
//
// The kernel truncates every argument the default policy inspects to 32 bits (ioctl's
// cmd, socket's family, type and protocol, personality's persona; clone uses
// lower_32_bits of its flags), so comparing the high half too would let a caller
// slip past the rule by setting a bit the kernel ignores.
type ArgCond struct {
	Index  int      // argument number, 0..5
	Op     Op       // In or NotIn
	Mask   uint32   // applied to the low 32 bits; must not be 0
	Values []uint32 // at least one
}

// Op compares a masked argument with a set of values.
type Op uint8

const (
	In    Op = iota + 1 // the masked argument is one of Values
	NotIn               // the masked argument is none of Values
)

func (o Op) String() string {
	switch o {
	case In:
		return "in"
	case NotIn:
		return "not in"
	}
	return fmt.Sprintf("Op(%d)", o)
}

// low32 is the mask for a comparison of the whole 32-bit value.
const low32 = 0xffffffff

// argIn matches when the argument's low 32 bits are one of vals.
func argIn(index int, vals ...uint32) *ArgCond {
	return &ArgCond{Index: index, Op: In, Mask: low32, Values: vals}
}

// argNotIn matches when the argument's low 32 bits are none of vals.
func argNotIn(index int, vals ...uint32) *ArgCond {
	return &ArgCond{Index: index, Op: NotIn, Mask: low32, Values: vals}
}

// argAnyBit matches when any bit of mask is set in the argument's low 32 bits.
func argAnyBit(index int, mask uint32) *ArgCond {
	return &ArgCond{Index: index, Op: NotIn, Mask: mask, Values: []uint32{0}}
}
