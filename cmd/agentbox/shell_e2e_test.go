package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// tmuxServer is a tmux server of the test's own (its own socket, no user
// configuration), killed at the test's end.
type tmuxServer struct {
	t      *testing.T
	bin    string
	socket string
}

func startTmux(t *testing.T) *tmuxServer {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	testenv.Require(t, err == nil, "tmux is not installed (.ci/run installs it)")
	s := &tmuxServer{t: t, bin: bin, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { exec.Command(bin, "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.bin, append([]string{"-S", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// screen is what the pane shows, wrapped lines joined.
func (s *tmuxServer) screen() string { return s.run("capture-pane", "-p", "-J", "-t", "t") }

// waitScreen waits until the pane shows want; only a broken shell waits the
// whole minute (the machine is loaded; nothing here burns CPU while waiting).
func (s *tmuxServer) waitScreen(want string) {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		sc := s.screen()
		if strings.Contains(sc, want) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q:\n%s", want, sc)
		}
	}
}

// TestShellThroughTmux: agentbox shell in a real terminal (a tmux pane) against a
// daemon: typed commands run in the environment on a terminal of its own, the
// pane's size is the shell's and a resized pane resizes it, the shell's exit
// status is agentbox's, and the pane's terminal gets its modes back.
func TestShellThroughTmux(t *testing.T) {
	tm := startTmux(t)
	d := startDaemon(t, t.TempDir())
	out, errOut, st := d.cli("env", "create", "--workspace", filepath.Join(d.work, "proj"))
	if st != 0 {
		t.Fatalf("create: %d %s", st, errOut)
	}
	id := strings.TrimSpace(out)
	defer d.cli("env", "rm", id)

	after := filepath.Join(t.TempDir(), "after")
	script := fmt.Sprintf(`stty -a > %[4]s.before; AGENTBOX_SERVER=%[1]s AGENTBOX_TOKEN=%[2]s %[3]s shell %[5]s; echo "status=$?" > %[4]s.tmp; stty -a >> %[4]s.tmp; mv %[4]s.tmp %[4]s; echo pane-done; sleep 600`,
		d.socket, e2eToken, agentbox, after, id)
	tm.run("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh", "-c", script)

	type step struct{ keys, want string }
	for _, s := range []step{
		{"echo hi-$((6*7)); cat hello.txt", "hi-42\nhello"},
		{"tty; stty size", "/dev/pts/0\n30 100"},
	} {
		tm.run("send-keys", "-t", "t", s.keys, "Enter")
		tm.waitScreen(s.want)
	}
	tm.run("resize-window", "-t", "t", "-x", "120", "-y", "40")
	// SIGWINCH reaches agentbox, which resizes the sandbox's terminal; then ask.
	for deadline := time.Now().Add(time.Minute); ; {
		tm.run("send-keys", "-t", "t", "clear; stty size", "Enter")
		time.Sleep(200 * time.Millisecond)
		if strings.Contains(tm.screen(), "40 120") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stty size never said 40 120:\n%s", tm.screen())
		}
	}
	t.Logf("screen before exit:\n%s", tm.screen())
	tm.run("send-keys", "-t", "t", "exit 3", "Enter")
	tm.waitScreen("pane-done")
	b, err := os.ReadFile(after)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(after + ".before")
	got := string(b)
	if !strings.HasPrefix(got, "status=3\n") {
		t.Fatalf("agentbox shell's status: %q", got)
	}
	// Raw mode turns these off; a restored terminal has them as before.
	for _, mode := range []string{"icanon", "echo", "isig", "icrnl", "opost"} {
		if !hasMode(string(before), mode) {
			t.Fatalf("the pane's terminal had no %s before agentbox ran:\n%s", mode, before)
		}
		if !hasMode(got, mode) {
			t.Errorf("the terminal was left without %s:\n%s", mode, got)
		}
	}
}

// hasMode reports whether stty -a output has mode on (not "-mode").
func hasMode(stty, mode string) bool {
	for _, f := range strings.Fields(stty) {
		if f == mode {
			return true
		}
	}
	return false
}
