package runner

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

func runNS(t *testing.T, spec Spec) *Result {
	t.Helper()
	testenv.RequireRoot(t)
	spec.Isolation = IsolationNamespace
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, res)
	}
	if res.Survivors != 0 {
		t.Fatalf("survivors = %d, want 0", res.Survivors)
	}
	return res
}

// hostProcsWith lists host processes whose command line contains marker.
func hostProcsWith(marker string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// uniqueSeconds returns a number of seconds for a `sleep` that no other test,
// nor another run of this one, uses: its command line finds this test's
// processes among those of other test binaries on the machine.
func uniqueSeconds() string {
	return strconv.Itoa(100_000_000 + int(rand.Int32N(900_000_000)))
}

func TestNamespaceExitShapes(t *testing.T) {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runNS(t, Spec{Argv: tc.argv})
			if res.ExitCode != tc.wantCode || res.Stdout != tc.wantOut {
				t.Fatalf("exit %d stdout %q error %q; want %d %q", res.ExitCode, res.Stdout, res.Error, tc.wantCode, tc.wantOut)
			}
			if res.Isolation != IsolationNamespace || res.LandlockABI == 0 {
				t.Fatalf("isolation %q landlock %d", res.Isolation, res.LandlockABI)
			}
		})
	}
}

// A timeout inside the sandbox takes everything with it: background, double-forked and
// setsid processes are gone from the host when Run returns.
func TestNamespaceTimeoutKillsEverything(t *testing.T) {
	marker := uniqueSeconds()
	script := `sleep ` + marker + ` & (sleep ` + marker + ` &) ; setsid sh -c 'trap "" TERM; exec sleep ` + marker + `' & sleep ` + marker
	res := runNS(t, Spec{Argv: sh(script), Limits: Limits{Timeout: 500 * time.Millisecond, KillGrace: 200 * time.Millisecond}})
	if !res.TimedOut || res.Limit != LimitTimeout || res.ExitStatus() != StatusTimeout {
		t.Fatalf("timed_out %v limit %q status %d", res.TimedOut, res.Limit, res.ExitStatus())
	}
	if left := hostProcsWith("sleep " + marker); len(left) > 0 {
		t.Fatalf("processes survived on the host: %v", left)
	}
}

func TestNamespaceMemoryLimitOOM(t *testing.T) {
	res := runNS(t, Spec{
		Argv:   []string{"python3", "-c", "b = bytearray(256 << 20); print('allocated')"},
		Limits: Limits{Memory: 64 << 20, Timeout: 30 * time.Second},
	})
	if !res.OOMKilled || res.Limit != LimitMemory || strings.Contains(res.Stdout, "allocated") {
		t.Fatalf("oom_killed %v limit %q stdout %q signal %v", res.OOMKilled, res.Limit, res.Stdout, res.Signal)
	}
}

// A fork bomb stays inside its pids limit and is gone afterwards.
func TestNamespaceForkBombContained(t *testing.T) {
	marker := "agentbox-bomb-" + uniqueSeconds()
	res := runNS(t, Spec{
		Argv:   []string{"perl", "-e", "while (1) { fork() }", marker},
		Limits: Limits{Pids: 32, Timeout: 2 * time.Second, KillGrace: 100 * time.Millisecond},
	})
	if !res.TimedOut {
		t.Fatalf("the bomb ended before the timeout: %+v", res)
	}
	if left := hostProcsWith(marker); len(left) > 0 {
		t.Fatalf("bomb processes left: %d", len(left))
	}
}

func TestNamespaceDiffOutAndHostUnchanged(t *testing.T) { diffOutAndHostUnchanged(t, runNS) }

// diffOutAndHostUnchanged: a command that reads, edits, removes and adds files
// in the workspace leaves a diff of exactly those changes in --diff-out, and the
// host's directory as it was.
func diffOutAndHostUnchanged(t *testing.T, run func(*testing.T, Spec) *Result) {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("same\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "edit.txt"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("bye\n"), 0o644)
	diffOut := filepath.Join(t.TempDir(), "changes.diff")
	res := run(t, Spec{
		Argv:      sh(`cat keep.txt && echo new > edit.txt && rm gone.txt && echo hello > added.txt`),
		Workspace: ws,
		Sandbox:   SandboxOptions{DiffOut: diffOut},
	})
	if res.ExitCode != 0 || res.Stdout != "same\n" {
		t.Fatalf("exit %d stdout %q: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	b, err := os.ReadFile(diffOut)
	if err != nil {
		t.Fatal(err)
	}
	diff := string(b)
	for _, want := range []string{"+++ b/added.txt", "+hello", "-old", "+new", "deleted file mode", "--- a/gone.txt"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "keep.txt") {
		t.Errorf("diff names an unchanged file:\n%s", diff)
	}
	// The host directory is never modified.
	if b, _ := os.ReadFile(filepath.Join(ws, "edit.txt")); string(b) != "old\n" {
		t.Fatalf("host edit.txt changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "gone.txt")); err != nil {
		t.Fatalf("host gone.txt removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "added.txt")); err == nil {
		t.Fatal("host gained added.txt")
	}
}

func TestNamespaceWriteModeChangesHost(t *testing.T) {
	ws := t.TempDir()
	res := runNS(t, Spec{Argv: sh(`echo written > out.txt`), Workspace: ws, Sandbox: SandboxOptions{WriteWorkspace: true}})
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "written\n" || res.ExitCode != 0 {
		t.Fatalf("--write did not reach the host: %q %v (exit %d %s)", b, err, res.ExitCode, res.Stderr)
	}
}

func TestNamespaceEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "AKIA-agentbox-ns-canary")
	res := runNS(t, Spec{Argv: []string{"env"}, Env: []string{"EXTRA=1"}})
	if strings.Contains(res.Stdout, "canary") {
		t.Fatalf("host secret leaked: %q", res.Stdout)
	}
	for _, want := range []string{"PATH=" + DefaultPath, "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "EXTRA=1"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("environment lacks %s: %q", want, res.Stdout)
		}
	}
}

func TestNamespaceCancellation(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	marker := uniqueSeconds()
	res, err := Run(ctx, Spec{Argv: sh(`sleep ` + marker + ` & wait`), Isolation: IsolationNamespace})
	if err != nil || !res.Cancelled || res.Survivors != 0 {
		t.Fatalf("err %v result %+v", err, res)
	}
	if left := hostProcsWith("sleep " + marker); len(left) > 0 {
		t.Fatalf("survivors on the host: %v", left)
	}
}

func TestNamespaceFileSizeAndCPULimits(t *testing.T) {
	res := runNS(t, Spec{Argv: sh(`exec head -c 5000000 /dev/zero > /tmp/big`), Limits: Limits{FileSize: 1 << 20}})
	if res.Limit != LimitFileSize {
		t.Fatalf("limit %q signal %v", res.Limit, res.Signal)
	}
	res = runNS(t, Spec{Argv: sh(`while :; do :; done`), Limits: Limits{CPUTime: time.Second, Timeout: 20 * time.Second}})
	if res.Limit != LimitCPU {
		t.Fatalf("limit %q signal %v", res.Limit, res.Signal)
	}
}
