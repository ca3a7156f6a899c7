package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv"
)

func runProc(t *testing.T, spec Spec) *Result {
	t.Helper()
	spec.Isolation = IsolationProcess
	if spec.Workspace == "" {
		spec.Workspace = t.TempDir()
	}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Survivors != 0 {
		t.Fatalf("survivors = %d, want 0", res.Survivors)
	}
	return res
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// The six failure shapes of seed 002 §13.4.5, and more.
func TestExitShapes(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "notexec")
	os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	for _, tc := range []struct {
		name       string
		argv       []string
		wantCode   int
		wantSignal string
		wantStdout string
		wantErr    bool
	}{
		{name: "normal exit", argv: []string{"/bin/echo", "hello"}, wantCode: 0, wantStdout: "hello\n"},
		{name: "non-zero exit", argv: sh("echo partial; exit 3"), wantCode: 3, wantStdout: "partial\n"},
		{name: "not found in PATH", argv: []string{"agentbox-no-such-command"}, wantCode: 127, wantErr: true},
		{name: "not found by path", argv: []string{"/nonexistent/bin/x"}, wantCode: 127, wantErr: true},
		{name: "not executable", argv: []string{notExec}, wantCode: 126, wantErr: true},
		{name: "directory", argv: []string{"/usr"}, wantCode: 126, wantErr: true},
		{name: "killed by SIGSEGV", argv: sh("kill -SEGV $$"), wantCode: 128 + 11, wantSignal: "SIGSEGV"},
		{name: "killed by SIGKILL", argv: sh("kill -KILL $$"), wantCode: 128 + 9, wantSignal: "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runProc(t, Spec{Argv: tc.argv})
			if res.ExitCode != tc.wantCode || res.ExitStatus() != tc.wantCode {
				t.Fatalf("exit code %d (status %d), want %d; error %q", res.ExitCode, res.ExitStatus(), tc.wantCode, res.Error)
			}
			gotSig := ""
			if res.Signal != nil {
				gotSig = *res.Signal
			}
			if gotSig != tc.wantSignal {
				t.Fatalf("signal %q, want %q", gotSig, tc.wantSignal)
			}
			if res.Stdout != tc.wantStdout {
				t.Fatalf("stdout %q, want %q", res.Stdout, tc.wantStdout)
			}
			if (res.Error != "") != tc.wantErr {
				t.Fatalf("error %q, want error: %v", res.Error, tc.wantErr)
			}
			if res.Limit != LimitNone || res.TimedOut || res.Cancelled {
				t.Fatalf("unexpected limit %q timed_out %v cancelled %v", res.Limit, res.TimedOut, res.Cancelled)
			}
		})
	}
}

// pidsAlive reports which of the pids written (one per line) to file still run.
func pidsAlive(t *testing.T, file string, want int) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != want {
		t.Fatalf("pid file has %d pids (%q), want %d: the test did not start its processes", len(fields), b, want)
	}
	var alive []int
	for _, f := range fields {
		pid, _ := strconv.Atoi(f)
		if st, err := readStat(pid); err == nil && st.state != 'Z' {
			alive = append(alive, pid)
		}
	}
	return alive
}

// A timeout must take the sleeping child, a double-forked grandchild and a setsid
// daemon with it, and Run must return only after they are gone.
func TestTimeoutKillsWholeTree(t *testing.T) {
	ws := t.TempDir()
	pids := filepath.Join(ws, "pids")
	script := `
sleep 300 & echo $! >> pids
( sleep 301 & echo $! >> pids ) &
setsid sh -c 'echo $$ >> pids; exec sleep 302' &
( setsid sh -c 'trap "" TERM; echo $$ >> pids; while :; do sleep 1; done' & ) &
sleep 1000`
	res := runProc(t, Spec{Argv: sh(script), Workspace: ws, Limits: Limits{Timeout: 700 * time.Millisecond, KillGrace: 300 * time.Millisecond}})
	if !res.TimedOut || res.Limit != LimitTimeout || res.ExitStatus() != StatusTimeout {
		t.Fatalf("timed_out %v limit %q status %d", res.TimedOut, res.Limit, res.ExitStatus())
	}
	// Had Run waited for them instead, the last (which never ends) would be alive.
	if alive := pidsAlive(t, pids, 4); len(alive) != 0 {
		t.Fatalf("processes survived the run: %v", alive)
	}
}

// Background processes left behind by a command that exits normally are killed too:
// nothing survives a run.
func TestNormalExitLeavesNothing(t *testing.T) {
	ws := t.TempDir()
	res := runProc(t, Spec{Argv: sh(`sleep 300 & echo $! > pids; (setsid sleep 301 & echo $! >> pids) ; echo done`), Workspace: ws})
	if res.ExitCode != 0 || res.Stdout != "done\n" {
		t.Fatalf("exit %d stdout %q", res.ExitCode, res.Stdout)
	}
	if alive := pidsAlive(t, filepath.Join(ws, "pids"), 2); len(alive) != 0 {
		t.Fatalf("survivors: %v", alive)
	}
}

func TestKillGraceEscalatesToSIGKILL(t *testing.T) {
	res := runProc(t, Spec{Argv: sh(`trap "" TERM; while :; do sleep 0.05; done`), Limits: Limits{Timeout: 300 * time.Millisecond, KillGrace: 200 * time.Millisecond}})
	if res.Signal == nil || *res.Signal != "SIGKILL" || !res.TimedOut {
		t.Fatalf("signal %v timed_out %v, want SIGKILL after the grace", res.Signal, res.TimedOut)
	}
}

func TestCPULimit(t *testing.T) {
	res := runProc(t, Spec{Argv: sh(`while :; do :; done`), Limits: Limits{CPUTime: time.Second, Timeout: 20 * time.Second}})
	if res.Limit != LimitCPU || res.Signal == nil || *res.Signal != "SIGXCPU" {
		t.Fatalf("limit %q signal %v, want cpu by SIGXCPU", res.Limit, res.Signal)
	}
	// The kernel checks CPU limits on its tick and rusage splits user and system time by
	// sampling, so the figure is near, not exactly, the limit.
	if used := res.CPUUserMS + res.CPUSysMS; used < 500 || used > 3000 {
		t.Fatalf("cpu used %d+%d ms, want about 1000", res.CPUUserMS, res.CPUSysMS)
	}
}

func TestFileSizeLimit(t *testing.T) {
	ws := t.TempDir()
	res := runProc(t, Spec{Argv: sh(`exec head -c 5000000 /dev/zero > big`), Workspace: ws, Limits: Limits{FileSize: 1 << 20}})
	if res.Limit != LimitFileSize || res.Signal == nil || *res.Signal != "SIGXFSZ" {
		t.Fatalf("limit %q signal %v, want file_size by SIGXFSZ", res.Limit, res.Signal)
	}
	if st, err := os.Stat(filepath.Join(ws, "big")); err != nil || st.Size() != 1<<20 {
		t.Fatalf("file size %v, %v; want exactly the limit", st, err)
	}
}

func vmRSS(t *testing.T) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// `yes` into a 64 KiB cap: the child writes gigabytes, agentbox keeps head and tail
// only, its own memory stays flat, and the hard total ends the run.
func TestOutputFloodBoundedMemory(t *testing.T) {
	before := vmRSS(t)
	res := runProc(t, Spec{Argv: []string{"yes"}, Limits: Limits{OutputLimit: 64 << 10, OutputTotal: 1 << 30, Timeout: time.Minute}})
	grew := vmRSS(t) - before
	if res.Limit != LimitOutput {
		t.Fatalf("limit %q, want output", res.Limit)
	}
	if res.StdoutBytes < 1<<30 || !res.StdoutTruncated {
		t.Fatalf("stdout_bytes %d truncated %v", res.StdoutBytes, res.StdoutTruncated)
	}
	if len(res.Stdout) > 64<<10+100 || !strings.Contains(res.Stdout, "bytes dropped]") || !strings.HasPrefix(res.Stdout, "y\ny\n") || !strings.HasSuffix(res.Stdout, "y\n") {
		t.Fatalf("captured %d bytes, head %q tail %q", len(res.Stdout), res.Stdout[:20], res.Stdout[len(res.Stdout)-20:])
	}
	if grew > 32<<20 {
		t.Fatalf("agentbox RSS grew by %d bytes while the child wrote %d", grew, res.StdoutBytes)
	}
	t.Logf("child wrote %d bytes; agentbox RSS grew %d bytes", res.StdoutBytes, grew)
}

func TestBinaryOutputKeepsJSONValid(t *testing.T) {
	res := runProc(t, Spec{Argv: sh(`printf 'ok\377\376\000end'; printf '\200' >&2`)})
	b, err := json.Marshal(res)
	if err != nil || !utf8.Valid(b) {
		t.Fatalf("marshal: %v valid %v", err, utf8.Valid(b))
	}
	if res.Stdout != "ok\\xFF\\xFE\x00end" || res.Stderr != "\\x80" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if res.StdoutBytes != 8 {
		t.Fatalf("stdout_bytes %d, want 8", res.StdoutBytes)
	}
}

// Characters cut at either end of the head/tail split are dropped whole, never escaped.
func TestSplitMultibyteAtCap(t *testing.T) {
	for _, limit := range []int64{7, 8, 9, 10, 11, 64} {
		res := runProc(t, Spec{Argv: sh(`i=0; while [ $i -lt 40 ]; do printf 'é€𝄞'; i=$((i+1)); done`), Limits: Limits{OutputLimit: limit}})
		if !utf8.ValidString(res.Stdout) || strings.Contains(res.Stdout, `\x`) {
			t.Fatalf("limit %d: %q", limit, res.Stdout)
		}
		if !res.StdoutTruncated || res.StdoutBytes != 40*9 {
			t.Fatalf("limit %d: truncated %v bytes %d", limit, res.StdoutTruncated, res.StdoutBytes)
		}
	}
}

func TestStdin(t *testing.T) {
	res := runProc(t, Spec{Argv: []string{"cat"}, Stdin: strings.NewReader("hello stdin")})
	if res.Stdout != "hello stdin" {
		t.Fatalf("stdout %q", res.Stdout)
	}
	res = runProc(t, Spec{Argv: []string{"cat"}})
	if res.Stdout != "" || res.ExitCode != 0 {
		t.Fatalf("default stdin is not empty: %q", res.Stdout)
	}
}

// The host environment must never reach the command (a leaked cloud key is the classic).
func TestHostEnvironmentNotInherited(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "AKIA-agentbox-canary")
	res := runProc(t, Spec{Argv: []string{"env"}, Env: []string{"EXTRA=1", "LANG=fr_FR.UTF-8"}})
	if strings.Contains(res.Stdout, "canary") || strings.Contains(res.Stdout, "AWS_") {
		t.Fatalf("host secret leaked: %q", res.Stdout)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		k, _, _ := strings.Cut(line, "=")
		keys = append(keys, k)
	}
	if got := strings.Join(keys, ","); got != "PATH,HOME,TMPDIR,EXTRA,LANG" {
		t.Fatalf("environment keys %s", got)
	}
	if !strings.Contains(res.Stdout, "LANG=fr_FR.UTF-8") {
		t.Fatalf("--env did not override LANG: %q", res.Stdout)
	}
}

// Only descriptors 0-2 reach the command, even ones agentbox inherited without
// close-on-exec (CVE-2024-21626 was a leaked descriptor).
func TestNoInheritedDescriptors(t *testing.T) {
	fd, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0) // deliberately not O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// Probe with fstat rather than listing /proc/self/fd, which itself opens a
	// descriptor (and a shell pipeline holds pipe ends for a moment).
	probe := `import os
open_fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        open_fds.append(fd)
    except OSError:
        pass
print(open_fds)`
	res := runProc(t, Spec{Argv: []string{"python3", "-S", "-c", probe}})
	if strings.TrimSpace(res.Stdout) != "[]" {
		t.Fatalf("descriptors beyond 0-2 in the child: %q %q", res.Stdout, res.Stderr)
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	ws := t.TempDir()
	res, err := Run(ctx, Spec{Argv: sh(`sleep 300 & echo $! > pids; wait`), Workspace: ws, Isolation: IsolationProcess})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.TimedOut || res.Survivors != 0 {
		t.Fatalf("cancelled %v timed_out %v survivors %d", res.Cancelled, res.TimedOut, res.Survivors)
	}
	if alive := pidsAlive(t, filepath.Join(ws, "pids"), 1); len(alive) != 0 {
		t.Fatalf("survivors %v", alive)
	}
}

func TestOutputFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	res := runProc(t, Spec{Argv: sh(`seq 1 100000`), StdoutFile: out, Limits: Limits{OutputLimit: 100}})
	b, err := os.ReadFile(out)
	if err != nil || int64(len(b)) != res.StdoutBytes || !strings.HasSuffix(string(b), "\n100000\n") {
		t.Fatalf("file has %d bytes (%v), stream had %d", len(b), err, res.StdoutBytes)
	}
	// A link planted where the output file goes must not redirect the write.
	canary := filepath.Join(dir, "canary")
	os.WriteFile(canary, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(canary, link)
	_, err = Run(context.Background(), Spec{Argv: []string{"true"}, StdoutFile: link, Isolation: IsolationProcess, Workspace: dir})
	if err == nil {
		t.Fatal("output file through a symlink was accepted")
	}
	if b, _ := os.ReadFile(canary); string(b) != "keep" {
		t.Fatalf("canary changed: %q", b)
	}
}

func TestWorkspaceAndCwd(t *testing.T) {
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	res := runProc(t, Spec{Argv: []string{"pwd"}, Workspace: ws, Cwd: "sub"})
	if got := strings.TrimSpace(res.Stdout); got != filepath.Join(ws, "sub") {
		t.Fatalf("pwd %q", got)
	}
}

// TestDefaultCPULimit: with no --cpu-time, every process of a run gets an RLIMIT_CPU
// of the wall timeout on every CPU (SIGKILL one second later), at both levels, so
// CPU stays bounded even if agentbox's timer never fires.
func TestDefaultCPULimit(t *testing.T) {
	testenv.RequireRoot(t)
	want := fmt.Sprintf("Max cpu time %d %d seconds", 60*runtime.NumCPU(), 60*runtime.NumCPU()+1)
	for _, iso := range []Isolation{IsolationProcess, IsolationNamespace} {
		t.Run(string(iso), func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "grep '^Max cpu time' /proc/self/limits | tr -s ' '"},
				Workspace: t.TempDir(), Isolation: iso, Limits: Limits{Timeout: time.Minute}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("%v %+v", err, res)
			}
			if got := strings.TrimSpace(res.Stdout); got != want {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
}

// secretPolicy allows example.com and holds a secret TOKEN for it.
func secretPolicy(t *testing.T) *egress.Policy {
	s, err := egress.NewSecret("TOKEN", "value", "example.com")
	if err != nil {
		t.Fatal(err)
	}
	return &egress.Policy{Allow: []string{"example.com"}, Secrets: []egress.Secret{s}}
}

func TestValidate(t *testing.T) {
	for name, spec := range map[string]Spec{
		"no argv":           {},
		"empty argv0":       {Argv: []string{""}},
		"nul in arg":        {Argv: []string{"echo", "a\x00b"}},
		"bad env":           {Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
		"empty env key":     {Argv: []string{"true"}, Env: []string{"=x"}},
		"absolute cwd":      {Argv: []string{"true"}, Cwd: "/etc"},
		"escaping cwd":      {Argv: []string{"true"}, Cwd: "a/../../b"},
		"negative timeout":  {Argv: []string{"true"}, Limits: Limits{Timeout: -1}},
		"sub-second cpu":    {Argv: []string{"true"}, Limits: Limits{CPUTime: time.Millisecond}},
		"tiny memory":       {Argv: []string{"true"}, Limits: Limits{Memory: 1000}},
		"negative memory":   {Argv: []string{"true"}, Limits: Limits{Memory: -2}},
		"negative pids":     {Argv: []string{"true"}, Limits: Limits{Pids: -2}},
		"unlimited files":   {Argv: []string{"true"}, Limits: Limits{OpenFiles: Unlimited}},
		"too few files":     {Argv: []string{"true"}, Limits: Limits{OpenFiles: 2}},
		"limit over total":  {Argv: []string{"true"}, Limits: Limits{OutputLimit: 10, OutputTotal: 5}},
		"bad isolation":     {Argv: []string{"true"}, Isolation: "vm"},
		"diff-out needs ns": {Argv: []string{"true"}, Isolation: IsolationProcess, Sandbox: SandboxOptions{DiffOut: "x"}},
		"negative ws size":  {Argv: []string{"true"}, Sandbox: SandboxOptions{WorkspaceSize: -1}},
		"ws size and write": {Argv: []string{"true"}, Sandbox: SandboxOptions{WorkspaceSize: 1 << 30, WriteWorkspace: true}},
		"ws size needs ns":  {Argv: []string{"true"}, Isolation: IsolationProcess, Sandbox: SandboxOptions{WorkspaceSize: 1 << 30}},
		"network needs ns":  {Argv: []string{"true"}, Isolation: IsolationProcess, Sandbox: SandboxOptions{Network: &egress.Policy{Allow: []string{"example.com"}}}},
		"bad network":       {Argv: []string{"true"}, Sandbox: SandboxOptions{Network: &egress.Policy{Allow: []string{"*.com"}}}},
		"env over secret":   {Argv: []string{"true"}, Env: []string{"TOKEN=x"}, Sandbox: SandboxOptions{Network: secretPolicy(t)}},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Run(context.Background(), spec)
			if err == nil || res != nil {
				t.Fatalf("accepted: %v", res)
			}
		})
	}
}
