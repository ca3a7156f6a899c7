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

// execIn runs argv in e and returns how it ended and its stdout; its stderr goes
// to the test's log.
func execIn(t *testing.T, e *Env, argv ...string) (ProcessExit, string) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errOut, err := os.CreateTemp(t.TempDir(), "err")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if b, _ := os.ReadFile(errOut.Name()); len(b) > 0 {
			t.Logf("%v: stderr %q", argv, b)
		}
		errOut.Close()
	}()
	p, err := e.Exec(ExecConfig{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}}, Stdio{Stdout: out, Stderr: errOut})
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

// The helpers that hold a command's PID namespace and report its status are
// out of the command's reach: it cannot kill its namespace's init (root, pid 1
// there) or any process of another command (outside its namespace), it holds no
// descriptor but its stdio (the report and control pipes stay with the
// helpers), and a kill(-1) ends only its own processes. If any of these failed, a command could forge its result or escape
// the kill of its tree.
func TestEnvHelpersOutOfReach(t *testing.T) {
	testenv.SkipShort(t, "starts a gVisor sandbox")
	e, _ := startEnv(t)
	other, err := e.Exec(ExecConfig{Argv: []string{"sleep", "61"}, Env: []string{"PATH=/usr/bin:/bin"}}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Kill()
	// The other command's sleep, found by its command line in the sandbox's /proc.
	const find = `for d in /proc/[0-9]*; do [ "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" = "sleep 61 " ] && echo ${d#/proc/}; done`
	ex, out := execIn(t, e, "sh", "-c", "sleep 0.5; "+
		"kill -9 1 && echo killed-init; "+
		"pids=$("+find+"); echo found $pids; for p in $pids; do kill -9 $p && echo killed-other-$p; done; "+
		"ls /proc/self/fd | tr '\\n' ' '; echo; "+
		"exit 3")
	lines := strings.Split(out, "\n")
	if ex.ExitCode != 3 || strings.Contains(out, "killed") || len(lines) < 2 || len(strings.Fields(lines[0])) != 2 {
		t.Fatalf("want the other command's sleep found and nothing killed: %+v\n%s", ex, out)
	}
	if fds := strings.Fields(lines[1]); len(fds) > 4 || !strings.HasPrefix(lines[1], "0 1 2 ") {
		t.Errorf("the command holds descriptors beyond its stdio (and ls's own): %q", lines[1])
	}
	// kill(-1) spares the caller: the shell's background sleep dies, the shell goes on.
	ex, out = execIn(t, e, "sh", "-c", "sleep 30 & kill -9 -1; wait $!; echo status $?")
	if ex.ExitCode != 0 || ex.Err != nil || out != "status 137\n" {
		t.Errorf("kill(-1) from the command: %+v %q, want its own sleep killed and its status reported", ex, out)
	}
	select {
	case <-other.done:
		t.Fatal("another command died of this one's kills")
	default:
	}
}
