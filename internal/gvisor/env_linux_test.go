package gvisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// startEnv starts an environment on a workspace of the test's own, owned by
// uid 1000, with TMPDIR (the state directory) the test's too.
func startEnv(t *testing.T) (*Env, string) {
	t.Helper()
	testenv.RequireRoot(t)
	_, err := exec.LookPath("runsc")
	testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
	t.Setenv("TMPDIR", t.TempDir())
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("lower\n"), 0o644)
	os.Chown(ws, 1000, 1000)
	e, err := StartEnv(Config{Workspace: ws, UID: 1000, GID: 1000, WorkspaceSize: 8 << 20, Memory: 1 << 30, Pids: 256, TmpSize: 64 << 20, ShmSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n, err := e.Destroy(); n != 0 || err != nil {
			t.Errorf("destroy: %d survivors, %v", n, err)
		}
	})
	return e, ws
}

func execIn(t *testing.T, e *Env, argv ...string) (ProcessExit, string) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := e.Exec(ExecConfig{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}}, Stdio{Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	ex := p.Wait()
	if n, err := p.Kill(); n != 0 || err != nil {
		t.Errorf("kill: %d survivors, %v", n, err)
	}
	b, _ := os.ReadFile(out.Name())
	return ex, string(b)
}

// A command of an environment runs as the workspace's user without
// capabilities, in a PID namespace of its own (its parent is the namespace's
// init, pid 1), and its status is its own.
func TestEnvExec(t *testing.T) {
	testenv.SkipShort(t, "starts a gVisor sandbox")
	e, _ := startEnv(t)
	for _, tc := range []struct {
		name string
		argv []string
		code int
		sig  syscall.Signal
		out  string
		err  error
	}{
		{"exit code", []string{"sh", "-c", "exit 7"}, 7, 0, "", nil},
		{"signal", []string{"sh", "-c", "kill -SEGV $$"}, -1, syscall.SIGSEGV, "", nil},
		{"identity", []string{"sh", "-c", "id -u; grep CapEff /proc/self/status; echo $PPID"}, 0, 0, "1000\nCapEff:\t0000000000000000\n1\n", nil},
		{"reads the workspace", []string{"cat", "a.txt"}, 0, 0, "lower\n", nil},
		{"not found", []string{"no-such-command"}, -1, 0, "", ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, out := execIn(t, e, tc.argv...)
			if ex.Err != tc.err || ex.ExitCode != tc.code || ex.Signal != tc.sig || out != tc.out {
				t.Errorf("got %+v, output %q; want code %d signal %v output %q err %v", ex, out, tc.code, tc.sig, tc.out, tc.err)
			}
		})
	}
}

// A command's daemon (double fork, setsid) does not outlive it, and another
// command's processes are not touched.
func TestEnvCommandTreeDies(t *testing.T) {
	testenv.SkipShort(t, "starts a gVisor sandbox")
	e, _ := startEnv(t)
	other, err := e.Exec(ExecConfig{Argv: []string{"sleep", "60"}, Env: []string{"PATH=/usr/bin:/bin"}}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := execIn(t, e, "sh", "-c", "(setsid sh -c 'sleep 300 & echo $! > /tmp/daemon') &")
	if ex.ExitCode != 0 || ex.Err != nil {
		t.Fatalf("daemon's starter: %+v", ex)
	}
	// /proc is the sandbox's: every command's processes are in it.
	_, out := execIn(t, e, "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
	if strings.Contains(out, "sleep 300") || !strings.Contains(out, "sleep 60") {
		t.Errorf("want the other command's sleep 60 and not the finished one's daemon, sleep 300: %q", out)
	}
	select {
	case <-other.done:
		t.Fatal("the other command ended with the first")
	default:
	}
	other.Signal(syscall.SIGTERM)
	if ex := other.Wait(); ex.Signal != syscall.SIGTERM {
		t.Errorf("SIGTERM to sleep: %+v", ex)
	}
	other.Kill()
}

// A write through the workspace descriptor is what commands see, theirs reach
// the upper layer, bounded by WorkspaceSize; Kill of a running command ends it.
func TestEnvWorkspaceAndKill(t *testing.T) {
	testenv.SkipShort(t, "starts a gVisor sandbox")
	e, _ := startEnv(t)
	host := filepath.Join("/proc/self/fd", itoa(int(e.WorkspaceDir().Fd())), "host.txt")
	if err := os.WriteFile(host, []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ex, out := execIn(t, e, "sh", "-c", "cat host.txt; echo inside > b.txt"); ex.ExitCode != 0 || out != "from host\n" {
		t.Fatalf("%+v %q", ex, out)
	}
	if b, err := os.ReadFile(filepath.Join(e.UpperDir(), "b.txt")); err != nil || string(b) != "inside\n" {
		t.Errorf("upper layer b.txt: %q %v", b, err)
	}
	// The workspace's changes are bounded (8 MiB here), as at the namespace level.
	if ex, out := execIn(t, e, "sh", "-c", "head -c 16777216 /dev/zero > big"); ex.ExitCode == 0 {
		t.Errorf("16 MiB written to an 8 MiB workspace: %+v %q", ex, out)
	}
	p, err := e.Exec(ExecConfig{Argv: []string{"sleep", "600"}}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if n, err := p.Kill(); n != 0 || err != nil {
		t.Fatalf("kill: %d %v", n, err)
	}
	if ex := p.Wait(); ex.Signal != syscall.SIGKILL {
		t.Errorf("killed: %+v", ex)
	}
	t.Logf("kill took %v", time.Since(start))
}

func itoa(n int) string { return strconv.Itoa(n) }
