package attack

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEscape_HostKernelServesTheCommand is the attack surface itself: a command
// whose system calls the host kernel serves reaches every bug in the host kernel
// code behind the calls its sandbox allows, and can read the host kernel's exact
// release to pick an exploit for it. At the process and namespace levels the
// command is a host task (seccomp narrows that surface; it does not remove it):
// this test fails there by design, so it runs only from TestSuiteOnEveryLevel,
// which requires that. Under gVisor no host task runs the command: the Sentry
// serves its calls and reports a release of its own.
func TestEscape_HostKernelServesTheCommand(t *testing.T) {
	if os.Getenv(isolationEnv) == "" {
		t.Skip("only gVisor stops it: TestSuiteOnEveryLevel runs it at every level")
	}
	requireSandbox(t)
	fx := newFixture(t)
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	host := unix.ByteSliceToString(uts.Release[:])
	r := fx.run(boxOpts{cmd: []string{"/bin/sh", "-c", "uname -r; sleep 1", fx.tag}})
	if r.res.ExitCode != 0 {
		t.Fatalf("the command failed: %+v", r.res)
	}
	if got := strings.TrimSpace(r.res.Stdout); got == host {
		t.Errorf("ESCAPE host kernel: the command reads the host kernel's release %s", got)
	}
	if uids := r.watch.hostUIDs(); len(uids) > 0 {
		t.Errorf("ESCAPE host kernel: the command ran as host tasks (uids %v): the host kernel served its system calls", uids)
	}
	fx.verifyHost(r)
}
