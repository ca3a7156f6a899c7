package attack

import (
	"runtime"
	"strings"
	"testing"
)

// TestEscape_TIOCSTI_CVE_2017_5226: TIOCSTI (and TIOCLINUX's paste) push characters
// into a terminal's input, which the user's shell runs after the sandbox exits
// (bubblewrap CVE-2017-5226). The command must get EPERM from the filter on every
// descriptor, including with bit 32 of the command set (the kernel reads an unsigned
// int; a 64-bit comparison would miss it). On pipes the kernel alone would say
// ENOTTY, so EPERM proves the filter; with a pty as controlling terminal (if the
// sandbox has /dev/ptmx) the kernel would allow TIOCSTI, so only the filter stops it.
func TestEscape_TIOCSTI_CVE_2017_5226(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(1000, nil, "tiocsti")
		at.mustSucceed(t, "control: an unprivileged process may TIOCSTI its controlling tty", "ctty:sti", "ctty:sti-hi")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{cmd: fx.attack("tiocsti")})
		r.at.mustBeDone(t, "tiocsti")
		var names []string
		for _, fd := range []string{"0", "1", "2", "ctty", "devtty"} {
			for _, c := range []string{"sti", "sti-hi", "linux", "linux-hi"} {
				// 0, 1 and 2 always exist; ctty and devtty only with a pty.
				if _, reported := r.at.byName[fd+":"+c]; reported || len(fd) == 1 {
					names = append(names, fd+":"+c)
				}
			}
		}
		r.at.mustFailWith(t, "terminal injection", []string{"EPERM"}, names...)
		fx.verifyHost(r)
	})
}

// TestEscape_ForeignSyscallABIs: the i386 ABI (int $0x80) and x32 numbers (bit 30)
// reach system calls under other numbers; a filter that checks only x86_64 numbers
// (Codex's gap) lets them through. Each must kill the process with SIGSYS before the
// kernel runs it. socketcall exists only in the i386 ABI and multiplexes every socket
// operation behind one number.
func TestEscape_ForeignSyscallABIs(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("the i386 and x32 ABIs exist only on amd64")
	}
	cases := []struct{ abi, call string }{
		{"i386", "getpid"}, {"i386", "unshare"}, {"i386", "socketcall"}, {"i386", "io_uring"},
		{"x32", "getpid"}, {"x32", "unshare"}, {"x32", "io_uring"},
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, nil, "compat", "i386", "getpid")
		at.mustSucceed(t, "control: the i386 ABI works on this kernel", "i386:getpid")
		at = fx.direct(0, nil, "compat", "i386", "socketcall")
		at.mustSucceed(t, "control: socketcall creates a netlink socket on this kernel", "i386:socketcall")
		// x32 is not compiled into this kernel: without a filter the call returns
		// ENOSYS and the process lives, so SIGSYS in the sandbox is the filter's.
		at = fx.direct(0, nil, "compat", "x32", "getpid")
		at.mustBeDone(t, "compat")
	})
	for _, c := range cases {
		t.Run(c.abi+"-"+c.call, func(t *testing.T) {
			t.Parallel()
			requireSandbox(t)
			fx := newFixture(t)
			name := c.abi + ":" + c.call
			r := fx.run(boxOpts{cmd: fx.attack("compat", c.abi, c.call)})
			if !contains(r.at.tried, name) {
				t.Fatalf("the attacker never reached the %s call", name)
			}
			if at, ok := r.at.byName[name]; ok {
				t.Errorf("ESCAPE foreign ABI: %s returned to the process (%v); want death by SIGSYS", name, at)
			}
			if r.res.sig() != "SIGSYS" {
				t.Errorf("%s: the command ended with signal %q exit %d, want SIGSYS", name, r.res.sig(), r.res.ExitCode)
			}
			fx.verifyHost(r)
		})
	}
}

// TestEscape_HighBitsIn32BitArguments: socket(2)'s family and ioctl(2)'s command are
// 32-bit in the kernel; setting bit 32 changes the register but not the call. isolate's
// libseccomp rule compared all 64 bits and was bypassed this way. Every variant must
// still be denied.
func TestEscape_HighBitsIn32BitArguments(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, nil, "highbits")
		at.mustSucceed(t, "control: the kernel ignores the high bits", "socket:netlink-hi", "socket:packet-hi", "keyctl-hi")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{cmd: fx.attack("highbits")})
		r.at.mustBeDone(t, "highbits")
		r.at.mustFail(t, "high bits in a 32-bit argument", r.at.withPrefix("socket:")...)
		r.at.mustFailWith(t, "keyctl", []string{"EPERM"}, "keyctl", "keyctl-hi")
		r.at.mustFailWith(t, "terminal ioctl with high bits", []string{"EPERM"}, "ioctl-sti-hi", "ioctl-sti-hi63", "ioctl-linux-hi")
		fx.verifyHost(r)
	})
}

// TestEscape_IoUring: io_uring runs openat, connect and friends without a system call
// per operation, so no seccomp filter sees them, and it has a long CVE list; Codex,
// Anthropic's runtime and isolate all deny it.
func TestEscape_IoUring(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		fx.direct(0, nil, "iouring").mustSucceed(t, "control: io_uring works on this kernel", "setup")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{cmd: fx.attack("iouring")})
		r.at.mustBeDone(t, "iouring")
		r.at.mustFailWith(t, "io_uring", []string{"EPERM"}, "setup", "enter", "register")
		fx.verifyHost(r)
	})
}

// TestEscape_NestedUserNamespacesAndRemounts (ANCHORS vector 13): a nested user
// namespace hands the command every capability over new namespaces, and with them the
// root-only kernel code behind most container escapes (CVE-2022-0185, CVE-2023-32233);
// remounting / or /usr read-write, unmounting /proc's masks, mounting a fresh procfs,
// pivot_root/chroot and the new mount API would undo the sandbox's view.
func TestEscape_NestedUserNamespacesAndRemounts(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		fx.direct(1000, nil, "userns").mustSucceed(t, "control: unprivileged user namespaces work on this host",
			"clone:newuser", "unshare:newuser", "unshare-bin")
	})
	t.Run("sandbox-userns", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{cmd: fx.attack("userns")})
		r.at.mustBeDone(t, "userns")
		r.at.mustFail(t, "create a namespace", append(r.at.withPrefix("clone"), r.at.withPrefix("unshare")...)...)
		r.at.mustFailWith(t, "nested user namespace", []string{"EPERM"}, "clone:newuser", "unshare:newuser")
		fx.verifyHost(r)
	})
	t.Run("sandbox-mount", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{cmd: fx.attack("mount")})
		r.at.mustBeDone(t, "mount")
		names := r.at.withPrefix("")
		if len(names) < 15 {
			t.Errorf("only %d mount attempts reported: %v", len(names), names)
		}
		for _, n := range names {
			if at := r.at.byName[n]; !at.ok && strings.HasPrefix(at.detail, "REFUSED") {
				t.Errorf("the attacker refused to run: it is in the host's initial user namespace")
			}
		}
		r.at.mustFail(t, "change the mount table", names...)
		fx.verifyHost(r)
	})
}
