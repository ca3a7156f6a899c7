package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		script string
		code   int
		sig    syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"exit 255", 255, 0},
		{"kill -TERM $$", -1, syscall.SIGTERM},
		{"kill -KILL $$", -1, syscall.SIGKILL},
		{"kill -SEGV $$", -1, syscall.SIGSEGV},
		// The command's exit decides, whatever its children do afterwards.
		{"(sleep 1; exit 9) & exit 4", 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			r := sh(t, tt.script)
			if r.exit.ExitCode != tt.code || r.exit.Signal != tt.sig || r.exit.SetupErr != nil {
				t.Errorf("exit %d signal %v setup %v, want %d %v", r.exit.ExitCode, r.exit.Signal, r.exit.SetupErr, tt.code, tt.sig)
			}
		})
	}
}

// TestSetupErrors: failures before the command runs come as a *SetupError naming
// the stage and errno, never as an exit code the command could also have produced.
func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		stage string
		errno syscall.Errno
	}{
		{"not found", Config{Argv: []string{"no-such-command"}, Env: []string{"PATH=/usr/bin"}}, StageExec, syscall.ENOENT},
		{"missing path", Config{Argv: []string{"/usr/bin/no-such-command"}}, StageExec, syscall.ENOENT},
		{"not executable", Config{Argv: []string{"/etc/passwd"}}, StageExec, syscall.EACCES},
		{"directory", Config{Argv: []string{"/usr"}}, StageExec, syscall.EACCES},
		{"missing cwd", Config{Argv: []string{"/bin/true"}, Dir: "/nonexistent"}, "chdir", syscall.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runIn(t, tt.cfg)
			var se *SetupError
			if !errors.As(r.exit.SetupErr, &se) {
				t.Fatalf("SetupErr = %v, exit %+v", r.exit.SetupErr, r.exit)
			}
			if se.Stage != tt.stage || !errors.Is(se, tt.errno) || r.exit.ExitCode != -1 {
				t.Errorf("got stage %q errno %v exit %d, want %q %v -1", se.Stage, se.Errno, r.exit.ExitCode, tt.stage, tt.errno)
			}
		})
	}
}

// TestTerminate: Terminate sends SIGTERM to every process; the command's trap runs.
func TestTerminate(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.01; done"}}, false)
	waitOutput(t, r, "ready\n")
	if err := r.sb.Terminate(); err != nil {
		t.Fatal(err)
	}
	res := r.finish(t, "")
	if res.exit.ExitCode != 7 || res.stdout != "ready\ngot TERM\n" {
		t.Errorf("exit %+v stdout %q", res.exit, res.stdout)
	}
	if err := res.sb.Terminate(); !errors.Is(err, ErrDone) {
		t.Errorf("Terminate after Destroy = %v, want ErrDone", err)
	}
	if err := res.sb.Kill(); !errors.Is(err, ErrDone) {
		t.Errorf("Kill after Destroy = %v, want ErrDone", err)
	}
	if _, err := res.sb.Destroy(); !errors.Is(err, ErrDone) {
		t.Errorf("second Destroy = %v, want ErrDone", err)
	}
}

// TestKill: Kill ends a command that ignores SIGTERM; Wait reports SIGKILL.
func TestKill(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.01; done"}}, false)
	waitOutput(t, r, "ready\n")
	r.sb.Terminate()
	time.Sleep(20 * time.Millisecond)
	if err := r.sb.Kill(); err != nil {
		t.Fatal(err)
	}
	res := r.finish(t, "")
	if res.exit.Signal != syscall.SIGKILL || res.waitErr != nil {
		t.Errorf("exit %+v, wait error %v", res.exit, res.waitErr)
	}
}

// waitOutput waits until the sandbox's stdout starts with want.
func waitOutput(t *testing.T, r *running, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if strings.HasPrefix(r.stdoutSnapshot(), want) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("stdout never started with %q", want)
}

// TestNoSurvivors: a command that double-forks, starts a new session and leaves a
// process behind: Wait returns as soon as the command exits (the init kills the
// rest: had it waited for them, they would have lived to say "survived"), and after
// Destroy the cgroup is gone and no host process has the sandbox's uid.
func TestNoSurvivors(t *testing.T) {
	r := runIn(t, Config{Argv: []string{"/bin/sh", "-c",
		`(setsid sh -c 'sleep 30 & sleep 30; echo survived' &) ; (sh -c 'trap "" TERM HUP; sleep 30; echo survived' &); sleep 0.1; exit 0`}})
	if strings.Contains(r.stdout, "survived") {
		t.Errorf("the init waited for the survivors: %q", r.stdout)
	}
	if r.exit.ExitCode != 0 || r.survivors != 0 {
		t.Errorf("exit %+v survivors %d", r.exit, r.survivors)
	}
	for _, p := range r.sb.cg.Paths() {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("cgroup %s still there: %v", p, err)
		}
	}
	if pids := hostProcsOf(r.sb.HostUID()); len(pids) > 0 {
		t.Errorf("host processes with the sandbox's uid %d: %v", r.sb.HostUID(), pids)
	}
}

// TestForkBomb: a fork bomb under a pids limit hits the limit, and the whole tree is
// gone when the command exits.
func TestForkBomb(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", "f() { f | f & }; f; sleep 0.5"}, Pids: 64}, false)
	exit, err := r.sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.sb.Stats()
	if err != nil {
		t.Fatal(err)
	}
	res := r.finish(t, "")
	if st.PidsLimitHits == 0 {
		t.Errorf("pids limit never hit: %+v", st)
	}
	if exit.SetupErr != nil || res.survivors != 0 {
		t.Errorf("exit %+v survivors %d", exit, res.survivors)
	}
}

// hostProcsOf lists live host processes whose real uid is uid. Zombies are dead:
// they wait only for their parent (after a host crash, the host's init) to reap them.
func hostProcsOf(uid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		var uidOK, dead bool
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) > 1 && f[0] == "Uid:":
				uidOK = f[1] == strconv.Itoa(uid)
			case len(f) > 1 && f[0] == "State:":
				dead = f[1] == "Z" || f[1] == "X"
			}
		}
		if uidOK && !dead {
			out = append(out, pid)
		}
	}
	return out
}

// TestDistinctHostUIDs: concurrent sandboxes never share a host uid.
func TestDistinctHostUIDs(t *testing.T) {
	var rs []*running
	seen := map[int]bool{}
	for range 4 {
		r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", "read x"}}, true)
		rs = append(rs, r)
		if seen[r.sb.HostUID()] {
			t.Errorf("host uid %d used twice", r.sb.HostUID())
		}
		seen[r.sb.HostUID()] = true
	}
	for _, r := range rs {
		r.finish(t, "\n")
	}
}

// TestUsage: Rusage covers the command tree, Stats the cgroup.
func TestUsage(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/usr/bin/python3", "-c",
		"b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nn = 0\nfor i in range(3000000): n += i"}}, false)
	exit, err := r.sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.sb.Stats()
	if err != nil {
		t.Fatal(err)
	}
	r.finish(t, "")
	if exit.ExitCode != 0 || exit.Rusage.User < 50*time.Millisecond || exit.Rusage.MaxRSS < 64<<20 {
		t.Errorf("exit %+v", exit)
	}
	if st.CPUUser+st.CPUSys < exit.Rusage.User || st.MemoryPeak < 64<<20 {
		t.Errorf("stats %+v, rusage %+v", st, exit.Rusage)
	}
}

// TestMemoryLimit: the memory limit holds; the OOM kill shows in Stats.
func TestMemoryLimit(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/usr/bin/python3", "-c",
		"b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1"}, Memory: 64 << 20}, false)
	exit, _ := r.sb.Wait()
	st, err := r.sb.Stats()
	if err != nil {
		t.Fatal(err)
	}
	r.finish(t, "")
	if st.OOMKills == 0 || exit.ExitCode == 0 {
		t.Errorf("exit %+v stats %+v: no OOM kill", exit, st)
	}
}

// TestStartFailureCleansUp: a Start that fails after creating its cgroup and host
// uid reservation (and, for an overlay, its upper layer) leaves none of them.
func TestStartFailureCleansUp(t *testing.T) {
	var left []string
	abortHook = func(s *Sandbox) { left = footprint(s) }
	defer func() { abortHook = nil }()
	ws := workspaceFixture(t)
	for _, cfg := range []Config{
		{Argv: []string{"/bin/true"}, Workspace: "/nonexistent"},
		// Fails after the upper layer is made.
		{Argv: []string{"/bin/true"}, Workspace: ws, RootFS: "/nonexistent"},
	} {
		left = nil
		if _, err := Start(cfg, Stdio{}); err == nil {
			t.Fatal("Start succeeded")
		}
		if len(left) < 2 {
			t.Fatalf("abort saw only %q", left)
		}
		if l := leftovers(left); len(l) > 0 {
			t.Errorf("left behind: %q", l)
		}
	}
}

// TestInitIgnoresSignalsFromInside: pid 1 survives TERM, INT and HUP sent from the
// sandbox (it would otherwise take the whole sandbox down and lose the report);
// the kernel already drops KILL and STOP sent to a namespace's init from inside.
func TestInitIgnoresSignalsFromInside(t *testing.T) {
	r := sh(t, "for s in TERM INT HUP KILL STOP; do kill -$s 1; done; sleep 0.05; echo alive")
	if r.stdout != "alive\n" || r.exit.ExitCode != 0 || r.waitErr != nil {
		t.Errorf("stdout %q exit %+v wait %v", r.stdout, r.exit, r.waitErr)
	}
}

// TestRootFS: RootFS replaces the host's system directories. With the host's own
// root passed explicitly (as a detached tree) commands run; with a tree that has
// no /usr, nothing is there to run.
func TestRootFS(t *testing.T) {
	r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", "echo ok"}, RootFS: "/"})
	if r.stdout != "ok\n" {
		t.Errorf("RootFS /: stdout %q, setup %v", r.stdout, r.exit.SetupErr)
	}
	empty := t.TempDir()
	r = runIn(t, Config{Argv: []string{"/bin/sh", "-c", "echo ok"}, RootFS: empty})
	var se *SetupError
	if !errors.As(r.exit.SetupErr, &se) || se.Stage != StageExec || !errors.Is(se, syscall.ENOENT) {
		t.Errorf("empty RootFS: %+v", r.exit)
	}
}

// TestInitDiesInSetup: a persistent init that dies before it reports makes Start
// fail at once with its exit status, and leave nothing behind. Regression: the
// host held its own copies of the init's status pipe and exec socket until Start
// returned, so their EOF never came and Start waited the whole readyTimeout (a
// minute; here an init that reported an overlay mount failure and exited).
func TestInitDiesInSetup(t *testing.T) {
	var left []string
	abortHook = func(s *Sandbox) { left = footprint(s) }
	// Killed while it waits for its Spec, the init cannot have reported.
	writeSpec = func(s *Sandbox, _ io.Writer, _ *nsinit.Spec) error { return s.cmd.Process.Kill() }
	defer func() { abortHook, writeSpec = nil, defaultWriteSpec }()
	_, err := Start(Config{Persistent: true}, Stdio{})
	// Without the fix the error is readyTimeout's "not ready after 1m0s".
	if !errors.Is(err, ErrNoReport) || !strings.Contains(err.Error(), "init exited during setup: signal: killed") {
		t.Fatalf("Start: %v, want the init's death during setup", err)
	}
	if len(left) < 2 {
		t.Fatalf("abort saw only %q", left)
	}
	if l := leftovers(left); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}
}
