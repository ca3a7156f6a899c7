package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/testenv"
)

// environment starts a persistent sandbox the test's cleanup destroys.
func environment(t *testing.T, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	testenv.RequireRoot(t)
	cfg.Persistent = true
	sb, err := sandbox.Start(cfg, sandbox.Stdio{})
	if err != nil {
		t.Fatalf("start environment: %v", err)
	}
	t.Cleanup(func() {
		if n, err := sb.Destroy(); err != nil || n != 0 {
			t.Errorf("Destroy = %d, %v", n, err)
		}
	})
	return sb
}

func runIn(t *testing.T, sb *sandbox.Sandbox, spec Spec) *Result {
	t.Helper()
	res, err := RunIn(context.Background(), sb, spec)
	if err != nil {
		t.Fatalf("RunIn: %v (result %+v)", err, res)
	}
	if res.Survivors != 0 {
		t.Fatalf("survivors = %d, want 0", res.Survivors)
	}
	return res
}

func TestRunInExitShapes(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	for _, tc := range []struct {
		name     string
		argv     []string
		wantCode int
		wantOut  string
	}{
		{"normal", []string{"echo", "hi"}, 0, "hi\n"},
		{"non-zero", sh("exit 3"), 3, ""},
		{"not found", []string{"agentbox-no-such-command"}, 127, ""},
		{"not executable", []string{"/etc/passwd"}, 126, ""},
		{"signal", sh("kill -SEGV $$"), 139, ""},
		{"environment", []string{"sh", "-c", "echo $HOME $EXTRA"}, 0, "/tmp 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runIn(t, sb, Spec{Argv: tc.argv, Env: []string{"EXTRA=1"}})
			if res.ExitCode != tc.wantCode || res.Stdout != tc.wantOut {
				t.Fatalf("exit %d stdout %q error %q; want %d %q", res.ExitCode, res.Stdout, res.Error, tc.wantCode, tc.wantOut)
			}
			if res.Isolation != IsolationNamespace || res.LandlockABI == 0 {
				t.Fatalf("isolation %q landlock %d", res.Isolation, res.LandlockABI)
			}
		})
	}
}

// TestRunInTimeoutKillsOnlyItsTree: a command's timeout ends its background,
// double-forked and setsid processes, and nothing of a command running beside it.
func TestRunInTimeoutKillsOnlyItsTree(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	other := uniqueSeconds()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Result, 1)
	go func() {
		res, _ := RunIn(ctx, sb, Spec{Argv: sh(`sleep ` + other + ` & wait`)})
		done <- res
	}()
	marker := uniqueSeconds()
	script := `sleep ` + marker + ` & (sleep ` + marker + ` &) ; setsid sh -c 'trap "" TERM; exec sleep ` + marker + `' & sleep ` + marker
	res := runIn(t, sb, Spec{Argv: sh(script), Limits: Limits{Timeout: 500 * time.Millisecond, KillGrace: 200 * time.Millisecond}})
	if !res.TimedOut || res.Limit != LimitTimeout || res.ExitStatus() != StatusTimeout {
		t.Fatalf("timed_out %v limit %q status %d", res.TimedOut, res.Limit, res.ExitStatus())
	}
	if left := hostProcsWith("sleep " + marker); len(left) > 0 {
		t.Fatalf("processes of the timed-out command survived: %v", left)
	}
	if left := hostProcsWith("sleep " + other); len(left) == 0 {
		t.Fatal("the other command's processes died with the timed-out one")
	}
	cancel()
	select {
	case r := <-done:
		if r == nil || !r.Cancelled || r.Survivors != 0 {
			t.Fatalf("other command: %+v", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("the other command did not end after cancel")
	}
	if left := hostProcsWith("sleep " + other); len(left) > 0 {
		t.Fatalf("survivors after cancel: %v", left)
	}
}

// TestRunInOutput: capture, live streaming, the full-output file and stdin work as
// in Run; the hard output total ends only this command.
func TestRunInOutput(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	var live strings.Builder
	full := filepath.Join(t.TempDir(), "stdout")
	res := runIn(t, sb, Spec{Argv: sh(`cat; seq 1 20000`), Stdin: strings.NewReader("from stdin\n"),
		Stdout: &live, StdoutFile: full, Limits: Limits{OutputLimit: 100}})
	if !strings.HasPrefix(res.Stdout, "from stdin\n") || !res.StdoutTruncated || res.StdoutBytes != int64(live.Len()) {
		t.Fatalf("stdout %q truncated %v bytes %d live %d", res.Stdout, res.StdoutTruncated, res.StdoutBytes, live.Len())
	}
	if b, err := os.ReadFile(full); err != nil || string(b) != live.String() {
		t.Fatalf("full output file: %d bytes, %v", len(b), err)
	}
	res = runIn(t, sb, Spec{Argv: sh(`while :; do echo xxxxxxxxxxxxxxxx; done`), Limits: Limits{OutputTotal: 1 << 20}})
	if res.Limit != LimitOutput {
		t.Fatalf("limit %q", res.Limit)
	}
	if r := runIn(t, sb, Spec{Argv: []string{"true"}}); r.ExitCode != 0 {
		t.Fatalf("the environment is broken after an output kill: %+v", r)
	}
}

// TestRunInLimits: per-command rlimits hold; the environment's memory limit shows
// as the command's OOM; the environment survives both.
func TestRunInLimits(t *testing.T) {
	sb := environment(t, sandbox.Config{Memory: 64 << 20})
	res := runIn(t, sb, Spec{Argv: sh(`exec head -c 5000000 /dev/zero > /tmp/big`), Limits: Limits{FileSize: 1 << 20}})
	if res.Limit != LimitFileSize {
		t.Fatalf("limit %q signal %v", res.Limit, res.Signal)
	}
	res = runIn(t, sb, Spec{Argv: []string{"python3", "-c", "b = bytearray(256 << 20); print('allocated')"},
		Limits: Limits{Timeout: 30 * time.Second}})
	if !res.OOMKilled || res.Limit != LimitMemory || strings.Contains(res.Stdout, "allocated") {
		t.Fatalf("oom_killed %v limit %q stdout %q signal %v", res.OOMKilled, res.Limit, res.Stdout, res.Signal)
	}
	if r := runIn(t, sb, Spec{Argv: sh("ulimit -n")}); r.Stdout != "1024\n" || r.OOMKilled {
		t.Fatalf("after the OOM: %+v", r)
	}
}

func TestRunInInvalid(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	for _, spec := range []Spec{
		{Argv: []string{"true"}, Workspace: "/tmp"},
		{Argv: []string{"true"}, Limits: Limits{Memory: 64 << 20}},
		{Argv: []string{"true"}, Sandbox: SandboxOptions{DiffOut: "/tmp/x"}},
		{Argv: []string{"true"}, Isolation: IsolationProcess},
		{Argv: []string{"true"}, Cwd: "../x"},
	} {
		if _, err := RunIn(context.Background(), sb, spec); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("RunIn(%+v) = %v, want ErrInvalidSpec", spec, err)
		}
	}
}

// TestStartInSignal: a started command can be signalled while it runs; the signal
// reaches its background processes too.
func TestStartInSignal(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	var out strings.Builder
	c, err := StartIn(context.Background(), sb, Spec{Argv: sh(`trap 'echo term; wait; exit 5' TERM; (trap 'echo bg-term; exit 0' TERM; while :; do sleep 0.01; done) & sleep 0.1; echo ready; while :; do sleep 0.01; done`),
		Stdout: &syncWriter{b: &out}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(readSync(&out), "ready") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c.Signal(syscall.SIGTERM)
	res, err := c.Wait()
	if err != nil || res.ExitCode != 5 || !strings.Contains(res.Stdout, "term\n") || !strings.Contains(res.Stdout, "bg-term\n") {
		t.Fatalf("result %+v, %v", res, err)
	}
	c.Signal(syscall.SIGKILL) // after the end: nothing happens
}

var syncMu sync.Mutex

type syncWriter struct{ b *strings.Builder }

func (w *syncWriter) Write(p []byte) (int, error) {
	syncMu.Lock()
	defer syncMu.Unlock()
	return w.b.Write(p)
}

func readSync(b *strings.Builder) string {
	syncMu.Lock()
	defer syncMu.Unlock()
	return b.String()
}
