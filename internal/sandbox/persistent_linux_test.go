package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// startPersistent starts a persistent sandbox that the test's cleanup destroys,
// checking that nothing survives.
func startPersistent(t *testing.T, cfg Config) *Sandbox {
	t.Helper()
	testenv.RequireRoot(t)
	cfg.Persistent = true
	sb, err := Start(cfg, Stdio{})
	if err != nil {
		t.Fatalf("Start persistent: %v", err)
	}
	footprintsMu.Lock()
	footprints = append(footprints, footprint(sb)...)
	footprintsMu.Unlock()
	t.Cleanup(func() {
		if n, err := sb.Destroy(); err != nil || n != 0 {
			t.Errorf("Destroy = %d, %v", n, err)
		}
	})
	return sb
}

// execution is one command of a persistent sandbox whose output is collected.
type execution struct {
	p              *Process
	wg             sync.WaitGroup
	stdin          *os.File
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
}

// execIn starts argv in sb with pipes for stdin, stdout and stderr.
func execIn(t *testing.T, sb *Sandbox, cfg ExecConfig) (*execution, error) {
	t.Helper()
	if cfg.Env == nil {
		cfg.Env = []string{"PATH=/usr/bin:/bin"}
	}
	e := &execution{}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	e.stdin = inW
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	p, err := sb.Exec(cfg, Stdio{Stdin: inR, Stdout: outW, Stderr: errW})
	inR.Close()
	outW.Close()
	errW.Close()
	e.wg.Add(2)
	go func() { defer e.wg.Done(); io.Copy(lockedWriter{&e.mu, &e.stdout}, outR); outR.Close() }()
	go func() { defer e.wg.Done(); io.Copy(lockedWriter{&e.mu, &e.stderr}, errR); errR.Close() }()
	if err != nil {
		inW.Close()
		e.wg.Wait()
		return nil, err
	}
	e.p = p
	return e, nil
}

// finish waits for the main process, kills what is left and collects the output.
func (e *execution) finish(t *testing.T) (Exit, Cleanup) {
	t.Helper()
	e.stdin.Close()
	ex, err := e.p.Wait()
	if err != nil {
		t.Errorf("Wait: %v", err)
	}
	cl, err := e.p.Kill()
	if err != nil || cl.Survivors != 0 {
		t.Errorf("Kill = %+v, %v", cl, err)
	}
	e.wg.Wait()
	return ex, cl
}

func shIn(t *testing.T, sb *Sandbox, script string) (string, Exit) {
	t.Helper()
	e, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	ex, _ := e.finish(t)
	return e.stdout.String() + e.stderr.String(), ex
}

// TestPersistentExec: commands of one persistent sandbox run under the same
// contract as a one-shot sandbox's: exact environment, working directory, exit
// code or signal, per-command rlimits, setup errors with stage and errno.
func TestPersistentExec(t *testing.T) {
	sb := startPersistent(t, Config{Workspace: workspaceFixture(t)})
	tests := []struct {
		name   string
		cfg    ExecConfig
		out    string
		code   int
		sig    syscall.Signal
		stage  string
		errno  syscall.Errno
		substr bool
	}{
		{name: "exit code", cfg: ExecConfig{Argv: []string{"/bin/sh", "-c", "echo hi; exit 3"}}, out: "hi\n", code: 3},
		{name: "signal", cfg: ExecConfig{Argv: []string{"/bin/sh", "-c", "kill -SEGV $$"}}, code: -1, sig: syscall.SIGSEGV},
		{name: "exact env", cfg: ExecConfig{Argv: []string{"/usr/bin/env"}, Env: []string{"A=1", "B=two"}}, out: "A=1\nB=two\n"},
		{name: "cwd", cfg: ExecConfig{Argv: []string{"/bin/pwd"}, Dir: "/tmp"}, out: "/tmp\n"},
		{name: "default cwd", cfg: ExecConfig{Argv: []string{"/bin/pwd"}}, out: "/workspace\n"},
		{name: "workspace", cfg: ExecConfig{Argv: []string{"/bin/cat", "a.txt"}}, out: "lower a\n"},
		// The soft limit is lent to the init around the fork: it holds from the
		// first instruction. The hard one comes with a prlimit just after.
		{name: "rlimits", cfg: ExecConfig{Argv: []string{"/bin/sh", "-c", "ulimit -n; sleep 0.2; ulimit -Hn; ulimit -c"},
			Rlimits: Rlimits{NoFile: Rlimit{Soft: 77, Hard: 88}}}, out: "77\n88\n0\n"},
		{name: "own session", cfg: ExecConfig{Argv: []string{"/bin/sh", "-c", `set -- $(cat /proc/self/stat | sed 's/.*) //'); [ "$4" = $$ ] && echo leader`}}, out: "leader\n"},
		{name: "not found", cfg: ExecConfig{Argv: []string{"no-such-command"}, Env: []string{"PATH=/usr/bin"}}, stage: StageExec, errno: syscall.ENOENT},
		{name: "not executable", cfg: ExecConfig{Argv: []string{"/etc/passwd"}}, stage: StageExec, errno: syscall.EACCES},
		{name: "missing cwd", cfg: ExecConfig{Argv: []string{"/bin/true"}, Dir: "/nonexistent"}, stage: "chdir", errno: syscall.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := execIn(t, sb, tt.cfg)
			if tt.stage != "" {
				var se *SetupError
				if !errors.As(err, &se) || se.Stage != tt.stage || !errors.Is(err, tt.errno) {
					t.Fatalf("Exec = %v, want setup error at %q with %v", err, tt.stage, tt.errno)
				}
				return
			}
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			ex, _ := e.finish(t)
			if ex.ExitCode != tt.code || ex.Signal != tt.sig {
				t.Errorf("exit %d signal %v, want %d %v (stderr %q)", ex.ExitCode, ex.Signal, tt.code, tt.sig, e.stderr.String())
			}
			if got := e.stdout.String(); got != tt.out {
				t.Errorf("stdout %q, want %q (stderr %q)", got, tt.out, e.stderr.String())
			}
			if !strings.HasPrefix(ex.Landlock, "abi=") {
				t.Errorf("Landlock %q", ex.Landlock)
			}
		})
	}
}

// TestPersistentConcurrent: commands run at the same time, each with its own stdio:
// each waits for all to have started, which commands run one after another never
// do (the first gives up after 60 s and says "alone").
func TestPersistentConcurrent(t *testing.T) {
	sb := startPersistent(t, Config{})
	const n = 6
	var wg sync.WaitGroup
	outs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _ = shIn(t, sb, fmt.Sprintf(`touch /tmp/started-%d; n=0
while [ $(ls /tmp/started-* | wc -l) -lt %d ]; do n=$((n+1)); [ $n -gt 6000 ] && { echo alone; exit 1; }; sleep 0.01; done
echo %d`, i, n, i))
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != fmt.Sprintf("%d\n", i) {
			t.Errorf("command %d wrote %q", i, o)
		}
	}
}

// procsOf lists the command lines of the sandbox's processes, seen from inside.
func procsOf(t *testing.T, sb *Sandbox) string {
	t.Helper()
	out, _ := shIn(t, sb, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done`)
	return out
}

// TestPersistentKillOnlyCommand: Kill ends every process of one command, those it
// left in its session, those that made a session of their own while their parent
// lived, and those re-parented to the init, and nothing of another command.
// Wait returns at the main process's exit, with its background still running.
func TestPersistentKillOnlyCommand(t *testing.T) {
	sb := startPersistent(t, Config{})
	a, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c",
		"sleep 1001 & setsid sleep 1002 & (sleep 1003 &); sleep 0.3; echo a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c", "sleep 2001 & echo b; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	a.stdin.Close()
	ex, err := a.p.Wait()
	if err != nil || ex.ExitCode != 0 {
		t.Fatalf("Wait = %+v, %v", ex, err)
	}
	ps := procsOf(t, sb)
	for _, want := range []string{"sleep 1001", "sleep 1002", "sleep 1003", "sleep 2001"} {
		if !strings.Contains(ps, want) {
			t.Fatalf("%q not running after A's main exit:\n%s", want, ps)
		}
	}
	cl, err := a.p.Kill()
	if err != nil || cl.Survivors != 0 {
		t.Fatalf("Kill = %+v, %v", cl, err)
	}
	ps = procsOf(t, sb)
	for _, gone := range []string{"sleep 1001", "sleep 1002", "sleep 1003"} {
		if strings.Contains(ps, gone) {
			t.Errorf("%q survived A's Kill:\n%s", gone, ps)
		}
	}
	if !strings.Contains(ps, "sleep 2001") {
		t.Errorf("B's background died with A:\n%s", ps)
	}
	if _, err := a.p.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	a.wg.Wait()
	// B, killed while its main process runs: Wait reports SIGKILL.
	if _, err := b.p.Kill(); err != nil {
		t.Fatal(err)
	}
	ex, err = b.p.Wait()
	if err != nil || ex.Signal != syscall.SIGKILL {
		t.Errorf("B's Wait after Kill = %+v, %v", ex, err)
	}
	b.stdin.Close()
	b.wg.Wait()
	if ps := procsOf(t, sb); strings.Contains(ps, "sleep") {
		t.Errorf("left running:\n%s", ps)
	}
}

// TestPersistentGoneUnasked: a command whose main process left nothing behind is
// reported gone with its exit, so its Kill asks the init nothing; one that left a
// process running is not, until its Kill.
func TestPersistentGoneUnasked(t *testing.T) {
	sb := startPersistent(t, Config{})
	alone, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	alone.stdin.Close()
	if ex, err := alone.p.Wait(); err != nil || ex.ExitCode != 0 {
		t.Fatalf("Wait = %+v, %v", ex, err)
	}
	select {
	case <-alone.p.gone:
	case <-time.After(time.Minute):
		t.Fatal("a command that left nothing was not reported gone without a Kill")
	}
	left, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 &"}})
	if err != nil {
		t.Fatal(err)
	}
	left.stdin.Close()
	if ex, err := left.p.Wait(); err != nil || ex.ExitCode != 0 {
		t.Fatalf("Wait = %+v, %v", ex, err)
	}
	// The init would send the unasked ReplyGone right after the ReplyExit, before
	// it reads another request: once a later command's replies are in, it is not
	// coming.
	shIn(t, sb, "true")
	select {
	case <-left.p.gone:
		t.Fatal("a command whose background still runs was reported gone")
	default:
	}
	if !strings.Contains(procsOf(t, sb), "sleep 1000") {
		t.Fatal("the background sleep is not running")
	}
	if cl, err := left.p.Kill(); err != nil || cl.Survivors != 0 {
		t.Fatalf("Kill = %+v, %v", cl, err)
	}
	left.wg.Wait()
	alone.wg.Wait()
	if ps := procsOf(t, sb); strings.Contains(ps, "sleep") {
		t.Errorf("left running:\n%s", ps)
	}
}

// TestPersistentSignal: Signal reaches every process of the command.
func TestPersistentSignal(t *testing.T) {
	sb := startPersistent(t, Config{})
	e, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c",
		"trap 'echo child; exit 0' TERM; sleep 0.2 & echo ready; while :; do sleep 0.01; done"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(syncString(e), "ready") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := e.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ex, _ := e.finish(t)
	if ex.ExitCode != 0 || !strings.Contains(e.stdout.String(), "child") {
		t.Errorf("exit %+v stdout %q", ex, e.stdout.String())
	}
}

// syncString reads what the command wrote to stdout so far.
func syncString(e *execution) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stdout.String()
}

// TestPersistentUsage: a command's CPU time is its own, not the sandbox's.
func TestPersistentUsage(t *testing.T) {
	sb := startPersistent(t, Config{})
	_, busy := shIn(t, sb, "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	_, idle := shIn(t, sb, "true")
	if busy.Rusage.User+busy.Rusage.Sys < 50*time.Millisecond {
		t.Errorf("busy command used %v", busy.Rusage)
	}
	if idle.Rusage.User+idle.Rusage.Sys >= busy.Rusage.User+busy.Rusage.Sys {
		t.Errorf("idle command %v, busy %v: usage not per command", idle.Rusage, busy.Rusage)
	}
}

// TestPersistentWorkspaceDir: the host sees /workspace exactly as the sandbox does,
// through the descriptor the init sent, and reads what a command wrote there.
func TestPersistentWorkspaceDir(t *testing.T) {
	sb := startPersistent(t, Config{Workspace: workspaceFixture(t)})
	if out, ex := shIn(t, sb, "echo from-inside > made.txt"); ex.ExitCode != 0 {
		t.Fatalf("%q %+v", out, ex)
	}
	dir := "/proc/self/fd/" + strconv.Itoa(int(sb.WorkspaceDir().Fd()))
	got, err := os.ReadFile(filepath.Join(dir, "made.txt"))
	if err != nil || string(got) != "from-inside\n" {
		t.Errorf("host read %q, %v", got, err)
	}
	// An existing file can be rewritten from the host (no new inode needed).
	if err := os.WriteFile(filepath.Join(dir, "made.txt"), []byte("from-host\n"), 0); err != nil {
		t.Fatal(err)
	}
	if out, _ := shIn(t, sb, "cat made.txt"); out != "from-host\n" {
		t.Errorf("sandbox read %q", out)
	}
}

// TestPersistentDestroy: destroying the sandbox ends its running commands; their
// Wait says SIGKILL, Kill succeeds, Exec fails.
func TestPersistentDestroy(t *testing.T) {
	testenv.RequireRoot(t)
	sb, err := Start(Config{Persistent: true}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	footprintsMu.Lock()
	footprints = append(footprints, footprint(sb)...)
	footprintsMu.Unlock()
	e, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sleep", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := sb.Destroy(); err != nil || n != 0 {
		t.Fatalf("Destroy = %d, %v", n, err)
	}
	ex, err := e.p.Wait()
	if err != nil || ex.Signal != syscall.SIGKILL {
		t.Errorf("Wait = %+v, %v", ex, err)
	}
	if _, err := e.p.Kill(); err != nil {
		t.Errorf("Kill = %v", err)
	}
	e.stdin.Close()
	e.wg.Wait()
	if _, err := sb.Exec(ExecConfig{Argv: []string{"/bin/true"}}, Stdio{}); !errors.Is(err, ErrDone) {
		t.Errorf("Exec after Destroy = %v, want ErrDone", err)
	}
}

// TestPersistentConfig: a persistent sandbox takes no command of its own.
func TestPersistentConfig(t *testing.T) {
	if _, err := Start(Config{Persistent: true, Argv: []string{"/bin/true"}}, Stdio{}); err == nil {
		t.Error("Start accepted a persistent sandbox with Argv")
	}
}

// TestPersistentSurvivesThreadExits is a regression test: the init's parent-death
// signal is tied to the thread that forked it, and the Go runtime ends a thread
// whose locked goroutine returns. Environments died whenever a file operation
// (which locks a thread to change its credentials) ended the thread that had
// started their init. Here Start runs on a thread that ends right after; the init
// is forked from a thread that never ends, so it lives on.
func TestPersistentSurvivesThreadExits(t *testing.T) {
	testenv.RequireRoot(t)
	type started struct {
		sb  *Sandbox
		err error
	}
	ch := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		sb, err := Start(Config{Persistent: true}, Stdio{})
		ch <- started{sb, err}
	}()
	st := <-ch
	if st.err != nil {
		t.Fatal(st.err)
	}
	sb := st.sb
	footprintsMu.Lock()
	footprints = append(footprints, footprint(sb)...)
	footprintsMu.Unlock()
	defer func() {
		if n, err := sb.Destroy(); err != nil || n != 0 {
			t.Errorf("Destroy = %d, %v", n, err)
		}
	}()
	time.Sleep(100 * time.Millisecond) // for the thread to end
	if out, ex := shIn(t, sb, "echo alive"); out != "alive\n" || ex.ExitCode != 0 {
		t.Fatalf("after the starting thread ended: %q %+v", out, ex)
	}
}

// TestPersistentInitIgnoresSignals: signals sent to the init (pid 1 receives from
// its namespace only those it handles, and the Go runtime handles them all; a
// user-sent SIGQUIT or SIGSEGV would make it throw) do not end it, so a command
// cannot take the environment's other commands down with it.
func TestPersistentInitIgnoresSignals(t *testing.T) {
	sb := startPersistent(t, Config{})
	sigs := []string{"HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "SEGV", "USR1", "USR2",
		"PIPE", "ALRM", "TERM", "STKFLT", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}
	var nums []string
	for _, sig := range append(sigs, "KILL", "STOP") {
		nums = append(nums, strconv.Itoa(int(unix.SignalNum("SIG"+sig))))
	}
	// From inside, the kernel refuses them all: the init has a uid of its own.
	out, ex := shIn(t, sb, "for s in "+strings.Join(nums, " ")+"; do kill -$s 1 2>/dev/null && echo $s; done; echo done")
	if out != "done\n" || ex.ExitCode != 0 {
		t.Errorf("signals a command could send to the init: %q %+v", out, ex)
	}
	// Where it shares the commands' uid (an unprivileged agentbox), the signals
	// reach it and its handlers drop them; the host can send them to show that.
	for _, sig := range sigs {
		if err := unix.Kill(sb.Pid(), unix.SignalNum("SIG"+sig)); err != nil {
			t.Fatal(err)
		}
		if out, ex := shIn(t, sb, "echo alive"); out != "alive\n" || ex.ExitCode != 0 {
			t.Fatalf("after SIG%s to the init: %q %+v", sig, out, ex)
		}
	}
}

// TestPersistentBigRequest: a request near nsinit.MaxMessage fits the socket
// (whose send buffer the host raises) and reaches the command whole.
func TestPersistentBigRequest(t *testing.T) {
	sb := startPersistent(t, Config{})
	arg := strings.Repeat("x", 120_000) // below the kernel's 128 KiB per argument
	argv := []string{"/bin/sh", "-c", `echo $(( ${#1} + ${#2} + ${#3} + ${#4} + ${#5} + ${#6} ))`, "sh", arg, arg, arg, arg, arg, arg}
	e, err := execIn(t, sb, ExecConfig{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	if ex, _ := e.finish(t); ex.ExitCode != 0 || e.stdout.String() != "720000\n" {
		t.Fatalf("exit %+v stdout %q stderr %q", ex, e.stdout.String(), e.stderr.String())
	}
}
