package attack

import (
	"os"
	"strings"
	"testing"
)

// TestEscape_LeakedFDs_CVE_2024_21626: runc leaked a descriptor of a host cgroup
// directory into the container; `openat(fd, "..")` from it walked to the host root.
// Here the harness itself leaks descriptors into agentbox (a host directory, the
// canary, the host root): none may reach the command, and no walk from any descriptor,
// /proc/PID/cwd or /proc/PID/root may reach a host path. Stopped by agentbox closing
// every descriptor but 0-2 before the init, and the init's own cwd/root being inside
// the new root.
func TestEscape_LeakedFDs_CVE_2024_21626(t *testing.T) {
	t.Parallel()
	leak := func(t *testing.T, fx *fixture) []*os.File {
		var files []*os.File
		for _, p := range []string{fx.dir, fx.canary, "/"} {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			files = append(files, f)
		}
		return files
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, leak(t, fx), "fds", hostRel(fx.canary))
		at.mustSucceed(t, "control: a leaked directory descriptor reaches the host", "fd:3", "walk:fd3")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{extra: leak(t, fx), cmd: fx.attack("fds", hostRel(fx.canary))})
		r.at.mustBeDone(t, "fds")
		for _, n := range r.at.withPrefix("fd:") {
			t.Errorf("ESCAPE leaked descriptor: %s %s", n, r.at.byName[n].detail)
		}
		if at, ok := r.at.get(t, "fd-count"); ok && at.detail != "[0 1 2]" {
			t.Errorf("the command has descriptors %s, want [0 1 2]", at.detail)
		}
		walks := r.at.withPrefix("walk:")
		if len(walks) < 3 {
			t.Errorf("too few walks tried (%v): the test proves nothing", walks)
		}
		r.at.mustFail(t, "walk from a descriptor or /proc/PID/{cwd,root} to the host", walks...)
		for _, n := range walks {
			if at := r.at.byName[n]; at.ok && strings.Contains(at.detail, "reached") {
				t.Logf("walk %s reached the host", n)
			}
		}
		fx.verifyHost(r)
	})
}
