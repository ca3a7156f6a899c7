package seccomp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

var update = flag.Bool("update", false, "rewrite testdata/default.bpf.txt")

func TestBuildRejects(t *testing.T) {
	ok := Rule{Syscall: "ptrace", Errno: errEPERM, Why: "x"}
	with := func(f func(r *Rule)) Rule { r := ok; f(&r); return r }
	cond := func(a ArgCond) Rule { r := ok; r.Syscall = "ioctl"; r.Arg = &a; return r }

	tests := []struct {
		name   string
		policy Policy
		want   error
		index  int
	}{
		{"unknown name", Policy{Rules: []Rule{ok, with(func(r *Rule) { r.Syscall = "ptrace2" })}}, ErrUnknownSyscall, 1},
		{"i386 name", Policy{Rules: []Rule{with(func(r *Rule) { r.Syscall = "socketcall" })}}, ErrUnknownSyscall, 0},
		{"errno 0 fakes success", Policy{Rules: []Rule{with(func(r *Rule) { r.Errno = 0 })}}, ErrInvalidRule, 0},
		{"errno above MAX_ERRNO", Policy{Rules: []Rule{with(func(r *Rule) { r.Errno = 4096 })}}, ErrInvalidRule, 0},
		{"kill with errno", Policy{Rules: []Rule{with(func(r *Rule) { r.Action = ActionKill })}}, ErrInvalidRule, 0},
		{"unknown action", Policy{Rules: []Rule{with(func(r *Rule) { r.Action = 7 })}}, ErrInvalidRule, 0},
		{"arg index 6", Policy{Rules: []Rule{cond(ArgCond{Index: 6, Op: In, Mask: low32, Values: []uint32{1}})}}, ErrInvalidRule, 0},
		{"arg index -1", Policy{Rules: []Rule{cond(ArgCond{Index: -1, Op: In, Mask: low32, Values: []uint32{1}})}}, ErrInvalidRule, 0},
		{"zero op", Policy{Rules: []Rule{cond(ArgCond{Index: 1, Mask: low32, Values: []uint32{1}})}}, ErrInvalidRule, 0},
		{"zero mask", Policy{Rules: []Rule{cond(ArgCond{Index: 1, Op: In, Values: []uint32{1}})}}, ErrInvalidRule, 0},
		{"no values", Policy{Rules: []Rule{cond(ArgCond{Index: 1, Op: NotIn, Mask: low32})}}, ErrInvalidRule, 0},
		{"value outside mask", Policy{Rules: []Rule{cond(ArgCond{Index: 1, Op: In, Mask: 0xf, Values: []uint32{0x10}})}}, ErrInvalidRule, 0},
		{"unreachable after unconditional", Policy{Rules: []Rule{
			with(func(r *Rule) { r.Syscall = "ioctl" }),
			cond(ArgCond{Index: 1, Op: In, Mask: low32, Values: []uint32{1}}),
		}}, ErrInvalidRule, 1},
		{"number above MaxSyscall", Policy{MaxSyscall: 100, Rules: []Rule{ok}}, ErrInvalidRule, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Build(tt.policy)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Build = %d instructions, %v; want %v", len(prog), err, tt.want)
			}
			var re *RuleError
			if !errors.As(err, &re) || re.Index != tt.index {
				t.Fatalf("error %v: want a *RuleError for rule %d", err, tt.index)
			}
		})
	}
}

func TestBuildTooLarge(t *testing.T) {
	vals := make([]uint32, 300)
	for i := range vals {
		vals[i] = uint32(i)
	}
	p := Policy{Rules: []Rule{{Syscall: "ioctl", Arg: argIn(1, vals...), Errno: errEPERM}}}
	if _, err := Build(p); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("300 values in one rule: got %v, want ErrTooLarge", err)
	}
}

// TestBuildEmpty: with no rules only the ABI checks remain, and they still bite.
func TestBuildEmpty(t *testing.T) {
	prog, err := Build(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	vm := newFilterVM(t, prog)
	if got := vm.run(t, call(101)); got != allow {
		t.Errorf("ptrace under empty policy: %s, want allow", verdict(got))
	}
	if got := vm.run(t, call(0x40000000|101)); got != kill {
		t.Errorf("x32 ptrace under empty policy: %s, want kill", verdict(got))
	}
}

// TestRuleOrder: for one call the first matching rule decides, and rules for
// different calls do not disturb each other even when interleaved.
func TestRuleOrder(t *testing.T) {
	p := Policy{Rules: []Rule{
		{Syscall: "ioctl", Arg: argIn(1, 7), Errno: 11},
		{Syscall: "socket", Arg: argIn(0, 7), Errno: 12},
		{Syscall: "ioctl", Arg: argIn(1, 7, 8), Errno: 13},
		{Syscall: "ioctl", Errno: 14},
		{Syscall: "socket", Arg: argNotIn(0, 7, 9), Action: ActionKill},
	}}
	prog, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	vm := newFilterVM(t, prog)
	for _, tt := range []struct {
		d    seccompData
		want uint32
	}{
		{call(16, 0, 7), errno(11)},
		{call(16, 0, 8), errno(13)},
		{call(16, 0, 9), errno(14)},
		{call(41, 7), errno(12)},
		{call(41, 9), allow},
		{call(41, 10), kill},
		{call(0), allow},
	} {
		if got := vm.run(t, tt.d); got != tt.want || got != reference(p, tt.d) {
			t.Errorf("%v: got %s, want %s (reference %s)", tt.d, verdict(got), verdict(tt.want), verdict(reference(p, tt.d)))
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	a, err := Build(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		b, err := Build(DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatal("two builds of DefaultPolicy differ")
		}
	}
}

// TestProgramShape checks the raw program uses only what the kernel's seccomp
// checker (seccomp_check_filter) accepts and what the VM-based tests model
// faithfully: aligned 32-bit loads inside seccomp_data, jeq/jgt/jge against a
// constant, AND with a constant, and constant returns, ending in a return.
func TestProgramShape(t *testing.T) {
	raw, err := Build(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	const (
		ldAbsW  = 0x20 // BPF_LD|BPF_W|BPF_ABS
		jeqK    = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
		jgtK    = 0x25 // BPF_JMP|BPF_JGT|BPF_K
		jgeK    = 0x35 // BPF_JMP|BPF_JGE|BPF_K
		andK    = 0x54 // BPF_ALU|BPF_AND|BPF_K
		retK    = 0x06 // BPF_RET|BPF_K
		dataLen = 64   // sizeof(struct seccomp_data)
	)
	for i, ins := range raw {
		switch ins.Op {
		case ldAbsW:
			if ins.K%4 != 0 || ins.K >= dataLen {
				t.Errorf("%d: load at offset %d: not an aligned word of seccomp_data", i, ins.K)
			}
		case jeqK, jgtK, jgeK:
			if i+1+int(ins.Jt) >= len(raw) || i+1+int(ins.Jf) >= len(raw) {
				t.Errorf("%d: jump past the end", i)
			}
		case andK, retK:
		default:
			t.Errorf("%d: %+v: unexpected opcode %#x", i, ins, ins.Op)
		}
	}
	if last := raw[len(raw)-1]; last.Op != retK {
		t.Errorf("last instruction %+v is not a constant return", last)
	}
}

// TestGolden keeps a readable copy of the default program in testdata so a
// policy change shows up in review as a diff of instructions.
func TestGolden(t *testing.T) {
	raw, err := Build(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	got := listing(raw)
	path := filepath.Join("testdata", "default.bpf.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("program differs from %s; run go test -run TestGolden -update and review the diff", path)
	}
}

// listing prints a program with the jump targets resolved and the numbers named.
func listing(raw []bpf.RawInstruction) string {
	names := map[uint32]string{}
	for n, nr := range sysnumX86_64 {
		names[nr] = n
	}
	errnos := map[uint32]string{1: "EPERM", 38: "ENOSYS", 93: "EPROTONOSUPPORT", 95: "EOPNOTSUPP", 97: "EAFNOSUPPORT"}
	var b strings.Builder
	fmt.Fprintf(&b, "# DefaultPolicy compiled by Build: %d instructions.\n", len(raw))
	fmt.Fprintf(&b, "# Regenerate with: go test -run TestGolden -update\n")
	// loaded[i] is what the accumulator holds when instruction i runs; every
	// jump goes forward, so one pass settles it.
	loaded := make([]string, len(raw)+1)
	flow := func(to int, what string) {
		if to < len(loaded) && loaded[to] != "" && loaded[to] != what {
			what = "?"
		}
		if to < len(loaded) {
			loaded[to] = what
		}
	}
	for i, ins := range raw {
		var text, note string
		cur := loaded[i]
		switch ins.Op {
		case 0x20:
			text = fmt.Sprintf("ld [%d]", ins.K)
			switch {
			case ins.K == offNr:
				cur = "nr"
			case ins.K == offArch:
				cur = "arch"
			default:
				cur = fmt.Sprintf("low32(args[%d])", (ins.K-offArgs)/8)
			}
			note = cur
			flow(i+1, cur)
		case 0x15, 0x25, 0x35:
			op := map[uint16]string{0x15: "jeq", 0x25: "jgt", 0x35: "jge"}[ins.Op]
			text = fmt.Sprintf("%s %#x ? %d : %d", op, ins.K, i+1+int(ins.Jt), i+1+int(ins.Jf))
			if cur == "nr" && ins.Op == 0x15 && names[ins.K] != "" {
				note = names[ins.K]
			}
			flow(i+1+int(ins.Jt), cur)
			flow(i+1+int(ins.Jf), cur)
		case 0x54:
			text = fmt.Sprintf("and %#x", ins.K)
			flow(i+1, cur+" & mask")
		case 0x06:
			switch {
			case ins.K == retAllow:
				text = "ret ALLOW"
			case ins.K == retKillProcess:
				text = "ret KILL_PROCESS"
			case ins.K&0xffff0000 == retErrno:
				text = fmt.Sprintf("ret ERRNO(%s)", errnos[ins.K&0xffff])
			default:
				text = fmt.Sprintf("ret %#x", ins.K)
			}
		default:
			text = fmt.Sprintf("%+v", ins)
		}
		if note != "" {
			text = fmt.Sprintf("%-28s ; %s", text, note)
		}
		fmt.Fprintf(&b, "%3d  %s\n", i, text)
	}
	return b.String()
}

// TestKernelCache emulates the kernel's seccomp_is_const_allow (kernel/seccomp.c),
// which at install time marks the numbers for which the filter always allows, so
// those calls skip the filter. Every call without an argument rule or a deny must
// stay in that cache; a program shape the emulator cannot follow would silently
// put the filter on every system call.
func TestKernelCache(t *testing.T) {
	p := DefaultPolicy()
	raw, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	argRules := map[uint32]bool{}
	for _, r := range p.Rules {
		if r.Arg != nil {
			argRules[sysnumX86_64[r.Syscall]] = true
		}
	}
	cached := 0
	for nr := uint32(0); nr < 512; nr++ {
		want := !argRules[nr] && reference(p, call(nr)) == allow
		if got := constAllow(raw, nr, auditArchX86_64); got != want {
			t.Errorf("nr %d: cached %v, want %v", nr, got, want)
		}
		if want {
			cached++
		}
	}
	if cached < 300 {
		t.Errorf("only %d numbers cached", cached)
	}
}

// constAllow is seccomp_is_const_allow: run the program knowing only nr and arch.
func constAllow(raw []bpf.RawInstruction, nr, arch uint32) bool {
	var a uint32
	for pc := 0; pc < len(raw); pc++ {
		ins := raw[pc]
		switch ins.Op {
		case 0x20: // ld [k]
			switch ins.K {
			case offNr:
				a = nr
			case offArch:
				a = arch
			default:
				return false
			}
		case 0x06: // ret k
			return ins.K == retAllow
		case 0x05: // ja
			pc += int(ins.K)
		case 0x15, 0x35, 0x25, 0x45: // jeq, jge, jgt, jset
			var res bool
			switch ins.Op {
			case 0x15:
				res = a == ins.K
			case 0x35:
				res = a >= ins.K
			case 0x25:
				res = a > ins.K
			case 0x45:
				res = a&ins.K != 0
			}
			if res {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case 0x54: // and k
			a &= ins.K
		default:
			return false
		}
	}
	return false
}

func BenchmarkBuild(b *testing.B) {
	p := DefaultPolicy()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDefaultPolicyAndBuild(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(DefaultPolicy()); err != nil {
			b.Fatal(err)
		}
	}
}
