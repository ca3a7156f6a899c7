package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Build compiles p into a seccomp BPF program for x86_64. It makes no system calls
// and the same Policy always gives the same program.
//
// The program, in order:
//
//  1. kills the process unless seccomp_data.arch is AUDIT_ARCH_X86_64;
//  2. kills it if the number is 0x40000000 or above (x32 and garbage), except -1,
//     which a tracer uses to skip a call and which the kernel answers with ENOSYS;
//  3. returns ENOSYS for numbers above p.MaxSyscall, if set;
//  4. for each system call named in p.Rules, in order of first appearance: one
//     compare of the number, then that call's rules in order, first match wins;
//  5. allows everything else.
//
// Only the arch and number checks and an argument's low 32 bits are loaded, so the
// kernel's constant-action cache (Linux 5.11+) still lets every call without an
// argument rule skip the filter entirely.
func Build(p Policy) ([]bpf.RawInstruction, error) {
	nrs, err := resolve(p)
	if err != nil {
		return nil, err
	}

	a := assembler{prog: make([]bpf.RawInstruction, 0, 16+4*len(p.Rules))}
	emit(&a, bpf.LoadAbsolute{Off: offArch, Size: 4})
	emit(&a, bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX86_64, SkipTrue: 1})
	emit(&a, bpf.RetConstant{Val: retKillProcess})
	emit(&a, bpf.LoadAbsolute{Off: offNr, Size: 4})
	emit(&a, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 3})
	emit(&a, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffff, SkipTrue: 1})
	emit(&a, bpf.RetConstant{Val: retKillProcess})
	emit(&a, bpf.RetConstant{Val: retAllow})
	if p.MaxSyscall != 0 {
		emit(&a, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: p.MaxSyscall, SkipFalse: 1})
		emit(&a, bpf.RetConstant{Val: retErrno | uint32(errENOSYS)})
	}

	// One group per number, in order of first appearance, holding that number's
	// rules in policy order. Quadratic in the number of rules, which is small.
	done := make([]bool, len(p.Rules))
	for i := range p.Rules {
		if done[i] {
			continue
		}
		// The compare skips the group's body when the number differs; its
		// length is known only once the body is written.
		at := len(a.prog)
		emit(&a, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nrs[i]})
		open := true // the last rule had a condition, so a call can fall through
		for j := i; j < len(p.Rules); j++ {
			if done[j] || nrs[j] != nrs[i] {
				continue
			}
			done[j] = true
			r := &p.Rules[j]
			if !open {
				return nil, &RuleError{Index: j, Syscall: r.Syscall, Err: ErrInvalidRule,
					Reason: "unreachable: an earlier rule matches every " + r.Syscall + " call"}
			}
			emitRule(&a, r)
			open = r.Arg != nil
		}
		if open {
			emit(&a, bpf.RetConstant{Val: retAllow}) // no other group has this number
		}
		n := len(a.prog) - at - 1
		if n > 255 {
			return nil, fmt.Errorf("%w: rules for %s need %d instructions, a jump spans 255",
				ErrTooLarge, p.Rules[i].Syscall, n)
		}
		a.prog[at].Jf = uint8(n)
	}
	emit(&a, bpf.RetConstant{Val: retAllow})

	if a.err != nil {
		return nil, fmt.Errorf("assemble seccomp program: %w", a.err)
	}
	if len(a.prog) > maxInsns {
		return nil, fmt.Errorf("%w: %d instructions, the kernel takes %d", ErrTooLarge, len(a.prog), maxInsns)
	}
	return a.prog, nil
}

// assembler collects instructions encoded by golang.org/x/net/bpf.
type assembler struct {
	prog []bpf.RawInstruction
	err  error
}

// instruction is any of golang.org/x/net/bpf's instruction types.
type instruction interface {
	Assemble() (bpf.RawInstruction, error)
}

// emit encodes one instruction. It is generic rather than taking a
// bpf.Instruction so that the instruction is not boxed: Build stays cheap enough
// to run on every sandbox start.
func emit[T instruction](a *assembler, ins T) {
	raw, err := ins.Assemble()
	if err != nil && a.err == nil {
		a.err = err
	}
	a.prog = append(a.prog, raw)
}

// resolve validates every rule on its own and returns each rule's number.
func resolve(p Policy) ([]uint32, error) {
	nrs := make([]uint32, len(p.Rules))
	for i, r := range p.Rules {
		nr, ok := sysnumX86_64[r.Syscall]
		if !ok {
			return nil, &RuleError{Index: i, Syscall: r.Syscall, Err: ErrUnknownSyscall}
		}
		reason := checkRule(r)
		if reason == "" && p.MaxSyscall != 0 && nr > p.MaxSyscall {
			reason = fmt.Sprintf("number %d is above MaxSyscall %d, which already fails with ENOSYS", nr, p.MaxSyscall)
		}
		if reason != "" {
			return nil, &RuleError{Index: i, Syscall: r.Syscall, Reason: reason, Err: ErrInvalidRule}
		}
		nrs[i] = nr
	}
	return nrs, nil
}

// checkRule returns what is wrong with r on its own, or "".
func checkRule(r Rule) string {
	switch r.Action {
	case ActionErrno:
		if r.Errno == 0 {
			return "errno 0 would make the call look successful without running it"
		}
		if r.Errno > maxErrno {
			return fmt.Sprintf("errno %d is above %d", uintptr(r.Errno), maxErrno)
		}
	case ActionKill:
		if r.Errno != 0 {
			return "a kill rule has no errno"
		}
	default:
		return fmt.Sprintf("unknown action %v", r.Action)
	}
	a := r.Arg
	if a == nil {
		return ""
	}
	switch {
	case a.Index < 0 || a.Index > 5:
		return fmt.Sprintf("argument index %d is not 0..5", a.Index)
	case a.Op != In && a.Op != NotIn:
		return fmt.Sprintf("unknown op %v", a.Op)
	case a.Mask == 0:
		return "mask 0 compares nothing"
	case len(a.Values) == 0:
		return "no values to compare with"
	}
	for _, v := range a.Values {
		if v&^a.Mask != 0 {
			return fmt.Sprintf("value %#x has bits outside mask %#x and can never be equal", v, a.Mask)
		}
	}
	return ""
}

// emitRule writes one rule: without a condition, its return; with one, a fresh
// load of the argument (an earlier AND may have clobbered the accumulator), the
// mask, one compare per value, and the return, which a call that does not meet
// the condition jumps over.
func emitRule(a *assembler, r *Rule) {
	ret := bpf.RetConstant{Val: action(r)}
	c := r.Arg
	if c == nil {
		emit(a, ret)
		return
	}
	emit(a, bpf.LoadAbsolute{Off: offArgs + 8*uint32(c.Index), Size: 4})
	if c.Mask != low32 {
		emit(a, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.Mask})
	}
	n := len(c.Values)
	for j, v := range c.Values {
		jeq := bpf.JumpIf{Cond: bpf.JumpEqual, Val: v}
		if c.Op == In { // any equal: jump to ret; none: skip it
			jeq.SkipTrue = skip(n - 1 - j)
			if j == n-1 {
				jeq.SkipFalse = 1
			}
		} else { // any equal: skip the rest and ret; none: reach ret
			jeq.SkipTrue = skip(n - j)
		}
		emit(a, jeq)
	}
	emit(a, ret)
}

// skip is a jump offset; one too long for a byte makes the whole body too long,
// which Build reports, so its value then does not matter.
func skip(n int) uint8 {
	if n > 255 {
		return 255
	}
	return uint8(n)
}

// action is the SECCOMP_RET_* value for r.
func action(r *Rule) uint32 {
	if r.Action == ActionKill {
		return retKillProcess
	}
	return retErrno | uint32(r.Errno)
}
