package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestDaemonGvisorEnvironment: `env create --isolation gvisor` makes an
// environment whose commands run under gVisor's kernel, `env ls` shows its
// level, a level that does not exist is refused by name, and rm removes it.
func TestDaemonGvisorEnvironment(t *testing.T) {
	testenv.SkipShort(t, "starts a gVisor environment")
	_, err := exec.LookPath("runsc")
	testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the daemon's gVisor state
	d := startDaemon(t, t.TempDir())
	proj := filepath.Join(d.work, "proj")
	if _, e, st := d.cli("env", "create", "--workspace", proj, "--isolation", "vm"); st == 0 || !strings.Contains(e, "isolation") {
		t.Fatalf("--isolation vm: %d %s", st, e)
	}
	out, e, st := d.cli("env", "create", "--workspace", proj, "--isolation", "gvisor")
	if st != 0 {
		t.Fatalf("create: %s", e)
	}
	id := strings.TrimSpace(out)
	// gVisor's Sentry answers uname with its own kernel version, not the host's.
	host, _ := exec.Command("uname", "-r").Output()
	if o, e, st := d.cli("exec", id, "--", "sh", "-c", "cat hello.txt; uname -r"); st != 0 || !strings.HasPrefix(o, "hello\n") || strings.Contains(o, strings.TrimSpace(string(host))) {
		t.Fatalf("exec: %d %q %s (host kernel %s)", st, o, e, host)
	}
	ls, _, _ := d.cli("env", "ls")
	var row string
	for _, l := range strings.Split(ls, "\n") {
		if strings.HasPrefix(l, id) {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 3 || f[2] != "gvisor" {
		t.Fatalf("env ls row of %s: %q\n%s", id, row, ls)
	}
	if _, e, st := d.cli("env", "rm", id); st != 0 {
		t.Fatalf("rm: %s", e)
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "agentbox-gvisor-*")); len(m) > 0 {
		t.Errorf("gVisor state left: %v", m)
	}
}
