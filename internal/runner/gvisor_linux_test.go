package runner

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
	"golang.org/x/sys/unix"
)

// runGV runs spec at the gvisor level with TMPDIR, where the sandbox's state
// lives, a directory of the test's own, and checks that no host process of the
// sandbox is left (their command lines name the state directory).
func runGV(t *testing.T, spec Spec) *Result {
	t.Helper()
	requireGvisor(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	spec.Isolation = IsolationGvisor
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, res)
	}
	if res.Survivors != 0 {
		t.Fatalf("survivors = %d, want 0", res.Survivors)
	}
	if left := hostProcsWith(tmp); len(left) > 0 {
		t.Fatalf("sandbox processes left on the host: %v", left)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Fatalf("state left in TMPDIR: %v", ents)
	}
	return res
}

func requireGvisor(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	_, err := exec.LookPath("runsc")
	testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
}

func TestGvisorExitShapes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		argv     []string
		wantCode int
		wantSig  string
		wantOut  string
	}{
		{"normal", []string{"echo", "hi"}, 0, "", "hi\n"},
		{"non-zero", sh("exit 3"), 3, "", ""},
		// runsc itself exits 137 for both; the result must not.
		{"exit 137", sh("exit 137"), 137, "", ""},
		{"signal", sh("kill -SEGV $$"), 139, "SIGSEGV", ""},
		{"not found", []string{"agentbox-no-such-command"}, 127, "", ""},
		{"not executable", []string{"/etc/passwd"}, 126, "", ""},
		{"cwd", []string{"pwd"}, 0, "", "/workspace\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runGV(t, Spec{Argv: tc.argv, Workspace: t.TempDir()})
			sig := ""
			if res.Signal != nil {
				sig = *res.Signal
			}
			if res.ExitCode != tc.wantCode || sig != tc.wantSig || res.Stdout != tc.wantOut {
				t.Fatalf("exit %d signal %q stdout %q error %q stderr %q; want %d %q %q", res.ExitCode, sig, res.Stdout, res.Error, res.Stderr, tc.wantCode, tc.wantSig, tc.wantOut)
			}
			if res.Isolation != IsolationGvisor {
				t.Fatalf("isolation %q", res.Isolation)
			}
		})
	}
}

// The command runs in gVisor's kernel, not the host's: uname reports the
// Sentry's release, which the namespace level would report as the host's.
func TestGvisorKernel(t *testing.T) {
	var host unix.Utsname
	if err := unix.Uname(&host); err != nil {
		t.Fatal(err)
	}
	res := runGV(t, Spec{Argv: []string{"uname", "-r"}})
	if got := strings.TrimSpace(res.Stdout); got == "" || got == unix.ByteSliceToString(host.Release[:]) {
		t.Fatalf("uname -r in the sandbox = %q, the host's is %q", got, unix.ByteSliceToString(host.Release[:]))
	}
}

// A timeout takes everything: a tree that ignores SIGTERM, background, setsid.
func TestGvisorTimeoutKillsEverything(t *testing.T) {
	marker := uniqueSeconds()
	script := `trap "" TERM; sleep ` + marker + ` & (sleep ` + marker + ` &) ; setsid sh -c 'trap "" TERM; exec sleep ` + marker + `' & sleep ` + marker
	res := runGV(t, Spec{Argv: sh(script), Limits: Limits{Timeout: 2 * time.Second, KillGrace: 300 * time.Millisecond}})
	if !res.TimedOut || res.Limit != LimitTimeout || res.ExitStatus() != StatusTimeout {
		t.Fatalf("timed_out %v limit %q status %d error %q", res.TimedOut, res.Limit, res.ExitStatus(), res.Error)
	}
}

func TestGvisorCancellation(t *testing.T) {
	requireGvisor(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	res, err := Run(ctx, Spec{Argv: sh(`sleep 1000 & wait`), Isolation: IsolationGvisor})
	if err != nil || !res.Cancelled || res.Survivors != 0 {
		t.Fatalf("err %v result %+v", err, res)
	}
	if left := hostProcsWith(tmp); len(left) > 0 {
		t.Fatalf("sandbox processes left on the host: %v", left)
	}
}

// The memory limit holds the whole sandbox; hitting it is reported as an OOM.
func TestGvisorMemoryLimitOOM(t *testing.T) {
	res := runGV(t, Spec{
		Argv:   []string{"python3", "-c", "b = bytearray(1 << 30); print('allocated')"},
		Limits: Limits{Memory: 256 << 20, Timeout: 60 * time.Second},
	})
	if !res.OOMKilled || res.Limit != LimitMemory || strings.Contains(res.Stdout, "allocated") {
		t.Fatalf("oom_killed %v limit %q stdout %q signal %v error %q", res.OOMKilled, res.Limit, res.Stdout, res.Signal, res.Error)
	}
}

func TestGvisorOutputCap(t *testing.T) {
	res := runGV(t, Spec{Argv: []string{"yes"}, Limits: Limits{OutputLimit: 1000, OutputTotal: 1 << 20, Timeout: 60 * time.Second}})
	if res.Limit != LimitOutput || !res.StdoutTruncated || res.StdoutBytes < 1<<20 || len(res.Stdout) > 1100 {
		t.Fatalf("limit %q truncated %v bytes %d kept %d", res.Limit, res.StdoutTruncated, res.StdoutBytes, len(res.Stdout))
	}
}

func TestGvisorLimitsAndUsage(t *testing.T) {
	res := runGV(t, Spec{Argv: sh(`exec head -c 5000000 /dev/zero > /tmp/big`), Limits: Limits{FileSize: 1 << 20}})
	if res.Limit != LimitFileSize {
		t.Fatalf("file size: limit %q signal %v error %q", res.Limit, res.Signal, res.Error)
	}
	res = runGV(t, Spec{Argv: sh(`i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`)})
	if res.ExitCode != 0 || res.CPUUserMS+res.CPUSysMS == 0 || res.MemoryPeakBytes == 0 {
		t.Fatalf("exit %d cpu %d+%d ms peak %d", res.ExitCode, res.CPUUserMS, res.CPUSysMS, res.MemoryPeakBytes)
	}
}

// No network but the sandbox's own loopback: a listener on the host's loopback
// is out of reach, one inside is not.
func TestGvisorNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	reached := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			reached <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`import socket
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("127.0.0.1", %d)); print("host reached")
except OSError as e:
    print("host refused", e.errno)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); print("own loopback ok")
for fam, addr in ((socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET6, ("2606:4700::1111", 53))):
    s = socket.socket(fam); s.settimeout(5)
    try:
        s.connect(addr); print("internet reached")
    except OSError as e:
        print("internet refused", e.errno)
`, port)
	res := runGV(t, Spec{Argv: []string{"python3", "-c", script}})
	if !strings.Contains(res.Stdout, "host refused") || strings.Contains(res.Stdout, "reached") || !strings.Contains(res.Stdout, "own loopback ok") {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	select {
	case <-reached:
		t.Fatal("the host's listener accepted a connection from the sandbox")
	default:
	}
}

func TestGvisorDiffOutAndHostUnchanged(t *testing.T) { diffOutAndHostUnchanged(t, runGV) }

func TestGvisorValidate(t *testing.T) {
	for _, s := range []Spec{
		{Argv: []string{"true"}, Isolation: IsolationGvisor, Sandbox: SandboxOptions{WriteWorkspace: true}},
		{Argv: []string{"true"}, Isolation: IsolationGvisor, Sandbox: SandboxOptions{RootFS: "/"}},
		{Argv: []string{"true"}, Isolation: IsolationGvisor, Sandbox: SandboxOptions{Network: secretPolicy(t)}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v validated", s.Sandbox)
		}
	}
}

// --pids holds inside gVisor (RLIMIT_NPROC of the command's user): forks fail
// once the sandbox has that many processes, and the children are gone after.
func TestGvisorPidsLimit(t *testing.T) {
	script := `import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        print(n, flush=True)
        break
    if pid == 0:
        time.sleep(1000)
    n += 1
`
	res := runGV(t, Spec{Argv: []string{"python3", "-c", script}, Limits: Limits{Pids: 16, Timeout: 60 * time.Second}})
	var n int
	if _, err := fmt.Sscan(res.Stdout, &n); err != nil || n < 1 || n >= 16 {
		t.Fatalf("forked %q children under --pids 16 (exit %d, stderr %q)", res.Stdout, res.ExitCode, res.Stderr)
	}
}

// The command is the workspace's owner with no capabilities: it changes what the
// owner may, files it creates belong to the owner on the host's side too, and a
// file of another user stays closed to it.
func TestGvisorIdentity(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "mine.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "roots.txt"), []byte("r\n"), 0o644)
	for _, p := range []string{ws, filepath.Join(ws, "mine.txt")} {
		if err := os.Chown(p, 1234, 1234); err != nil {
			t.Fatal(err)
		}
	}
	diffOut := filepath.Join(t.TempDir(), "d.diff")
	res := runGV(t, Spec{
		Argv:      sh(`id -u; grep CapEff /proc/self/status; echo b >> mine.txt && echo new > new.txt && echo ok; echo x >> roots.txt || echo denied`),
		Workspace: ws, Sandbox: SandboxOptions{DiffOut: diffOut},
	})
	for _, want := range []string{"1234\n", "CapEff:\t0000000000000000\n", "ok\n", "denied\n"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("stdout lacks %q: %q (stderr %q)", want, res.Stdout, res.Stderr)
		}
	}
	if b, _ := os.ReadFile(diffOut); !strings.Contains(string(b), "+++ b/new.txt") || !strings.Contains(string(b), "+b") || strings.Contains(string(b), "roots.txt") {
		t.Errorf("diff:\n%s", b)
	}

	res = runGV(t, Spec{Argv: sh(`id -u; touch /workspace/f && echo writable`)})
	if res.Stdout != "1000\nwritable\n" {
		t.Errorf("without a workspace: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}
