package main

import (
	"fmt"
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

	after := shellPane(tm, d, id)

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
	// The shell changes its own terminal's modes and size: the pane's stay.
	tm.run("send-keys", "-t", "t", "clear; stty -echo rows 7 cols 9; stty size", "Enter")
	tm.waitScreen("7 9")
	tm.run("send-keys", "-t", "t", "exit 3", "Enter")
	tm.waitScreen("pane-done")
	checkRestored(t, after, 3)
	if b, _ := os.ReadFile(after); !strings.Contains(string(b), "rows 40; columns 120") {
		t.Errorf("the pane's terminal is no longer 40x120:\n%s", b)
	}
	// exec --tty from pipes: the terminal is the sandbox's, sized by default.
	o, e, st := d.cli("exec", "--tty", id, "--", "sh", "-c", "tty; stty size; exit 4")
	if st != 4 || o != "/dev/pts/0\r\n24 80\r\n" {
		t.Errorf("exec --tty: status %d, stdout %q, stderr %q", st, o, e)
	}
	if _, e, st := d.cli("exec", "--tty", "--json", id, "--", "true"); st == 0 || !strings.Contains(e, "--tty") {
		t.Errorf("exec --tty --json: status %d, stderr %q", st, e)
	}
}

// TestShellTerminated: TERM to agentbox shell hangs up the shell (an interactive
// bash ignores TERM itself), and the terminal is restored on that way out too.
func TestShellTerminated(t *testing.T) {
	tm := startTmux(t)
	d := startDaemon(t, t.TempDir())
	out, errOut, st := d.cli("env", "create", "--workspace", filepath.Join(d.work, "proj"))
	if st != 0 {
		t.Fatalf("create: %d %s", st, errOut)
	}
	id := strings.TrimSpace(out)
	defer d.cli("env", "rm", id)
	after := shellPane(tm, d, id)
	tm.run("send-keys", "-t", "t", "echo ready-$((1+1))", "Enter")
	tm.waitScreen("ready-2")
	b, err := os.ReadFile(after + ".pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil { // agentbox, which this test started
		t.Fatal(err)
	}
	tm.waitScreen("pane-done")
	checkRestored(t, after, 129) // bash's status after SIGHUP
}

// shellPane starts agentbox shell ID in the tmux pane "t" (100x30), and returns
// the file prefix where the pane records agentbox's pid (.pid), its terminal's
// modes before (.before), and agentbox's status and the modes after (the prefix
// itself, written whole once agentbox exited).
func shellPane(tm *tmuxServer, d *daemon, id string) string {
	after := filepath.Join(tm.t.TempDir(), "after")
	script := fmt.Sprintf(`stty -a > %[4]s.before; AGENTBOX_SERVER=%[1]s AGENTBOX_TOKEN=%[2]s sh -c 'echo $$ > %[4]s.pid; exec %[3]s shell %[5]s'; echo "status=$?" > %[4]s.tmp; stty -a >> %[4]s.tmp; mv %[4]s.tmp %[4]s; echo pane-done; sleep 600`,
		d.socket, e2eToken, agentbox, after, id)
	tm.run("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh", "-c", script)
	return after
}

// checkRestored checks agentbox's exit status and that the pane's terminal has
// the modes raw mode turns off, as it had before.
func checkRestored(t *testing.T, after string, status int) {
	t.Helper()
	b, err := os.ReadFile(after)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(after + ".before")
	got := string(b)
	if !strings.HasPrefix(got, fmt.Sprintf("status=%d\n", status)) {
		t.Fatalf("agentbox shell's status: %q, want %d", got, status)
	}
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
