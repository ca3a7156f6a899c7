package seccomp

import (
	"fmt"
	"slices"
	"testing"
)

// benignArgs are arguments no rule of the default policy matches, so that a test
// can change one argument and know which rule it hit.
var benignArgs = map[string][6]uint64{
	"socket":      {afInet, 1, ipprotoTCP},
	"socketpair":  {afUnix, 1, 0},
	"clone":       {17},
	"ioctl":       {0, 0x5401},
	"personality": {perLinux},
}

// TestEveryRule compiles DefaultPolicy and, for every rule, builds a call that
// matches only that rule (with bits above 32 set, which must not matter) and one
// that misses its condition, and checks the program's verdict for both.
func TestEveryRule(t *testing.T) {
	p := DefaultPolicy()
	prog, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	vm := newFilterVM(t, prog)
	const junk = 0x5a5a_a5a5_0000_0000

	for i, r := range p.Rules {
		name := fmt.Sprintf("%d_%s", i, r.Syscall)
		if r.Arg != nil {
			name += fmt.Sprintf("_arg%d_%v_%#x", r.Arg.Index, r.Arg.Op, r.Arg.Values)
		}
		t.Run(name, func(t *testing.T) {
			if r.Why == "" {
				t.Error("rule has no Why")
			}
			nr, ok := sysnumX86_64[r.Syscall]
			if !ok {
				t.Fatalf("unknown syscall %q", r.Syscall)
			}
			want := errno(r.Errno)
			if r.Action == ActionKill {
				want = kill
			}
			hit := call(nr)
			hit.args = benignArgs[r.Syscall]
			if r.Arg == nil {
				hit.args = [6]uint64{junk | 1, junk | 2, junk | 3, junk | 4, junk | 5, junk | 6}
				if got := vm.run(t, hit); got != want {
					t.Errorf("%v: got %s, want %s", hit, verdict(got), verdict(want))
				}
				return
			}
			a := r.Arg
			matching, missing := witnesses(a)
			hit.args[a.Index] = junk | uint64(matching)
			for _, other := range p.Rules[:i] {
				if other.Syscall == r.Syscall && other.Arg != nil && other.Arg.matches(uint32(hit.args[other.Arg.Index])) {
					t.Fatalf("witness %v also matches an earlier rule; fix benignArgs", hit)
				}
			}
			if got := vm.run(t, hit); got != want {
				t.Errorf("matching %v: got %s, want %s", hit, verdict(got), verdict(want))
			}
			miss := hit
			miss.args[a.Index] = junk | uint64(missing)
			if got, ref := vm.run(t, miss), reference(p, miss); got != ref || got == want {
				t.Errorf("missing %v: got %s, reference %s; rule's own verdict %s", miss, verdict(got), verdict(ref), verdict(want))
			}
		})
	}
}

// witnesses returns a low-32-bit argument value that meets a and one that does
// not. Bits outside the mask are set where possible, to prove they are ignored.
func witnesses(a *ArgCond) (matching, missing uint32) {
	in := a.Values[0] | ^a.Mask
	out := uint32(0)
	for v := uint32(1); ; v++ {
		if !slices.Contains(a.Values, v&a.Mask) {
			out = v | ^a.Mask
			if !slices.Contains(a.Values, out&a.Mask) {
				break
			}
		}
	}
	if a.Op == In {
		return in, out
	}
	return out, in
}

// TestPolicyNames: every rule names a real x86_64 call and no call is listed twice
// without a condition.
func TestPolicyNames(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range DefaultPolicy().Rules {
		if _, ok := sysnumX86_64[r.Syscall]; !ok {
			t.Errorf("rule %d: unknown syscall %q", i, r.Syscall)
		}
		if r.Arg == nil {
			if seen[r.Syscall] {
				t.Errorf("rule %d: %s listed twice", i, r.Syscall)
			}
			seen[r.Syscall] = true
		}
	}
}
