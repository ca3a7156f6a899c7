package seccomp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRealDeal (after gVisor's test of the same name) runs each victimCase in a
// fresh copy of the test binary that installs the default filter and then makes
// real system calls, and checks the outcome: "ok", "errno:NAME", or "signal:NAME"
// when the filter killed it. Each case also runs once without the filter as a
// control (as root, since several controls need privilege), so every assertion is
// shown to depend on the filter rather than on the kernel refusing anyway.
func TestRealDeal(t *testing.T) {
	testenv.Require(t, seccompFilterAvailable(), "seccomp filter mode with SECCOMP_RET_KILL_PROCESS")
	dir := t.TempDir()
	for _, c := range victimCases {
		t.Run(c.name, func(t *testing.T) {
			if got := runVictim(t, c.name, !c.selfInstall, dir); got != c.filtered {
				t.Errorf("under the filter: %s, want %s", got, c.filtered)
			}
			if c.unfiltered == "" {
				return
			}
			t.Run("control", func(t *testing.T) {
				testenv.RequireRoot(t)
				got := runVictim(t, c.name, false, dir)
				if want, ok := strings.CutPrefix(c.unfiltered, "!"); ok {
					if got == want {
						t.Errorf("without the filter: %s, want anything else", got)
					}
				} else if got != c.unfiltered {
					t.Errorf("without the filter: %s, want %s", got, c.unfiltered)
				}
				if got == c.filtered {
					t.Errorf("without the filter the outcome is the same (%s): the test proves nothing", got)
				}
			})
		})
	}
}

// runVictim runs case name in a child copy of the test binary and returns its
// outcome.
func runVictim(t *testing.T, name string, filtered bool, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	flag := "0"
	if filtered {
		flag = "1"
	}
	cmd.Env = append(os.Environ(), victimEnv+"="+name, victimFilterEnv+"="+flag, victimDirEnv+"="+dir,
		// Under -race a process otherwise sleeps a second at exit.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "signal:" + signalName(ws.Signal())
		}
	}
	if err != nil {
		t.Fatalf("victim %s: %v\nstderr: %s", name, err, stderr.String())
	}
	for line := range strings.Lines(stdout.String()) {
		if out, ok := strings.CutPrefix(strings.TrimSpace(line), "outcome="); ok {
			return out
		}
	}
	t.Fatalf("victim %s printed no outcome\nstdout: %s\nstderr: %s", name, stdout.String(), stderr.String())
	return ""
}

func seccompFilterAvailable() bool {
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	return err == nil && strings.Contains(string(b), "kill_process") && strings.Contains(string(b), "errno")
}
