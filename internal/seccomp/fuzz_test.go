package seccomp

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// tb is what the checks need from testing.TB.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// deniedNrs are x86_64 numbers the default filter must never allow, whatever the
// arguments. Written out as numbers, apart from the policy data.
var deniedNrs = []uint32{
	101, 310, 311, 438, // ptrace, process_vm_readv/writev, pidfd_getfd
	165, 166, 155, 161, // mount, umount2, pivot_root, chroot
	428, 429, 430, 431, 432, 433, 442, 467, // new mount API
	272, 308, 435, // unshare, setns, clone3
	250, 248, 249, 321, 298, 323, 425, 426, 427, // keys, bpf, perf, userfaultfd, io_uring
	246, 320, 175, 313, 176, 167, 168, 169, 163, 179, 443, // kexec, modules, swap, reboot, acct, quota
	304, 303, 172, 173, 103, 153, 164, 227, 305, 159, // handles, iopl, ioperm, syslog, vhangup, time
	154, 134, 156, // modify_ldt, uselib, _sysctl
}

// checkInvariants fails if the verdict for d breaks a property of the default
// filter stated here independently of DefaultPolicy.
func checkInvariants(t tb, d seccompData, got uint32) {
	t.Helper()
	lo := func(i int) uint32 { return uint32(d.args[i]) }
	notIn := func(v uint32, set ...uint32) bool { return !slices.Contains(set, v) }
	fail := func(why string) { t.Errorf("%v: got %s, but %s", d, verdict(got), why) }

	if d.arch != auditArchX86_64 {
		if got != kill {
			fail("a foreign arch must be killed")
		}
		return
	}
	if d.nr >= x32SyscallBit && d.nr != 0xffffffff && got != kill {
		fail("x32 and out-of-range numbers must be killed")
	}
	if got != allow {
		return
	}
	switch {
	case d.nr > maxReviewed && d.nr != 0xffffffff:
		fail("numbers above the reviewed range must fail")
	case slices.Contains(deniedNrs, d.nr):
		fail("this call is always denied")
	case d.nr == 56 && lo(0)&cloneNewAny != 0:
		fail("clone with a namespace flag in the low 32 bits must be denied")
	case d.nr == 41 && notIn(lo(0), afUnix, afInet, afInet6):
		fail("socket family must be unix, inet or inet6")
	case d.nr == 41 && lo(1)&0xf == 10:
		fail("SOCK_PACKET must be denied")
	case d.nr == 41 && (lo(2) == ipprotoMPTCP || lo(2) == ipprotoSMC):
		fail("MPTCP and SMC must be denied")
	case d.nr == 53 && notIn(lo(0), afUnix, afInet, afInet6):
		fail("socketpair family must be unix, inet or inet6")
	case d.nr == 16 && !notIn(lo(1), tiocsti, tioclinux, tiocsetd):
		fail("TIOCSTI, TIOCLINUX and TIOCSETD must be denied")
	case d.nr == 135 && lo(0)&(0x0040000|0x0400000|0x0100000) != 0 && lo(0) != personaQuery:
		fail("personality must not turn off ASLR, add READ_IMPLIES_EXEC or MMAP_PAGE_ZERO")
	}
}

// FuzzDefaultFilter: any seccomp_data runs without error, gets what the policy
// means (reference), and never breaks an invariant.
func FuzzDefaultFilter(f *testing.F) {
	prog, err := Build(DefaultPolicy())
	if err != nil {
		f.Fatal(err)
	}
	vm := newFilterVM(f, prog)
	for _, s := range []struct {
		nr, arch uint32
		a0, a1   uint64
	}{
		{0, auditArchX86_64, 0, 0},
		{16, auditArchX86_64, 0, 1<<32 | tiocsti},
		{41, auditArchX86_64, 1<<32 | 16, 3},
		{56, auditArchX86_64, 0xffffffff_00000000 | cloneNewUser, 0},
		{135, auditArchX86_64, 0x0040000, 0},
		{20, auditArchI386, 0, 0},
		{0x40000027, auditArchX86_64, 0, 0},
		{0xffffffff, auditArchX86_64, 0, 0},
	} {
		f.Add(s.nr, s.arch, s.a0, s.a1, uint64(0), uint64(0), uint64(0), uint64(0))
	}
	p := DefaultPolicy()
	f.Fuzz(func(t *testing.T, nr, arch uint32, a0, a1, a2, a3, a4, a5 uint64) {
		d := seccompData{nr: nr, arch: arch, args: [6]uint64{a0, a1, a2, a3, a4, a5}}
		got := vm.run(t, d)
		if want := reference(p, d); got != want {
			t.Errorf("%v: program %s, reference %s", d, verdict(got), verdict(want))
		}
		checkInvariants(t, d, got)
	})
}

// TestRandomCalls is the fuzz check on a few hundred thousand random calls, drawn
// to hit the numbers and argument values that matter, on every go test run.
func TestRandomCalls(t *testing.T) {
	p := DefaultPolicy()
	prog, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	vm := newFilterVM(t, prog)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	nrs := append([]uint32{0, 1, 16, 39, 41, 53, 56, 57, 58, 135, 471, 472, 0x40000000 | 16, 0xffffffff}, deniedNrs...)
	lows := []uint32{0, 1, 2, 3, 6, 10, 16, 17, 30, 38, 40, 58, 132, 256, 262,
		0x80, 0x11, 0x50f00, tiocsti, tioclinux, tiocsetd, 0x5401, 0x80000 | 10,
		cloneNewUser, cloneNewNS, cloneNewNet, 0x0040000, 0x0400000, personaQuery}
	pick := func(xs []uint32) uint32 { return xs[rng.IntN(len(xs))] }
	arg := func() uint64 {
		var hi uint64
		if rng.IntN(2) == 0 {
			hi = rng.Uint64() << 32
		}
		if rng.IntN(4) == 0 {
			return hi | uint64(rng.Uint32())
		}
		return hi | uint64(pick(lows)|pick(lows)*uint32(rng.IntN(2)))
	}

	for i := 0; i < 200_000 && !t.Failed(); i++ {
		d := seccompData{nr: pick(nrs), arch: auditArchX86_64, ip: rng.Uint64()}
		switch rng.IntN(20) {
		case 0:
			d.arch = pick([]uint32{auditArchI386, 0, 0xc00000b7, rng.Uint32()})
		case 1:
			d.nr = rng.Uint32()
		case 2:
			d.nr = uint32(rng.IntN(600))
		}
		for j := range d.args {
			d.args[j] = arg()
		}
		got := vm.run(t, d)
		if want := reference(p, d); got != want {
			t.Errorf("%v: program %s, reference %s", d, verdict(got), verdict(want))
		}
		checkInvariants(t, d, got)
	}
}
