package seccomp

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
)

// seccompData is struct seccomp_data as the kernel hands it to a filter.
type seccompData struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [6]uint64
}

// call is an x86_64 call with the given number and arguments.
func call(nr uint32, args ...uint64) seccompData {
	d := seccompData{nr: nr, arch: auditArchX86_64, ip: 0x7f00_dead_beef}
	copy(d.args[:], args)
	return d
}

func (d seccompData) String() string {
	return fmt.Sprintf("{nr %#x arch %#x args %#x}", d.nr, d.arch, d.args)
}

// packet encodes d for golang.org/x/net/bpf's VM. The kernel reads seccomp_data
// with 32-bit loads in native (little-endian) order; the VM's 32-bit loads are
// big-endian. So each 32-bit word is stored big-endian at its offset, which makes a
// VM load at any 4-aligned offset return exactly what the kernel's load returns.
// TestProgramShape checks that the programs make no other kind of load.
func (d seccompData) packet() []byte {
	b := make([]byte, 64)
	put := func(off int, v uint64) {
		binary.BigEndian.PutUint32(b[off:], uint32(v))       // low half first, as on x86_64
		binary.BigEndian.PutUint32(b[off+4:], uint32(v>>32)) // then the high half
	}
	binary.BigEndian.PutUint32(b[0:], d.nr)
	binary.BigEndian.PutUint32(b[4:], d.arch)
	put(8, d.ip)
	for i, a := range d.args {
		put(16+8*i, a)
	}
	return b
}

// filterVM runs a built program in golang.org/x/net/bpf's interpreter.
type filterVM struct{ vm *bpf.VM }

func newFilterVM(t testing.TB, raw []bpf.RawInstruction) filterVM {
	t.Helper()
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("program has instructions x/net/bpf cannot disassemble")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	return filterVM{vm}
}

func (f filterVM) run(t testing.TB, d seccompData) uint32 {
	t.Helper()
	out, err := f.vm.Run(d.packet())
	if err != nil {
		t.Fatalf("run %v: %v", d, err)
	}
	return uint32(out)
}

// Verdicts as the filter returns them.
const (
	allow = retAllow
	kill  = retKillProcess
)

func errno(e syscall.Errno) uint32 { return retErrno | uint32(e) }

func verdict(v uint32) string {
	switch {
	case v == allow:
		return "allow"
	case v == kill:
		return "kill"
	case v&0xffff0000 == retErrno:
		return fmt.Sprintf("errno %d (%v)", v&0xffff, syscall.Errno(v&0xffff))
	}
	return fmt.Sprintf("%#x", v)
}

// reference is what a Policy means, written as plain Go independently of Build:
// the fuzz and property tests check the compiled program against it.
func reference(p Policy, d seccompData) uint32 {
	if d.arch != auditArchX86_64 {
		return kill
	}
	if d.nr >= x32SyscallBit {
		if d.nr == 0xffffffff {
			return allow
		}
		return kill
	}
	if p.MaxSyscall != 0 && d.nr > p.MaxSyscall {
		return errno(errENOSYS)
	}
	for _, r := range p.Rules {
		if sysnumX86_64[r.Syscall] != d.nr {
			continue
		}
		if r.Arg != nil && !r.Arg.matches(uint32(d.args[r.Arg.Index])) {
			continue
		}
		if r.Action == ActionKill {
			return kill
		}
		return errno(r.Errno)
	}
	return allow
}

func (a *ArgCond) matches(low uint32) bool {
	in := false
	for _, v := range a.Values {
		if low&a.Mask == v {
			in = true
		}
	}
	return in == (a.Op == In)
}
