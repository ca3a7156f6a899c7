package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// abandon does to s what the death of its agentbox does: the init dies (its
// parent-death signal), the locks go with the process's descriptors, and
// nothing is removed.
func abandon(s *Sandbox) {
	s.killed.Store(true)
	_ = s.cmd.Process.Kill()
	s.closeControl()
	_, _ = s.Wait()
	s.reapInit()
	s.cl.close()
	for _, f := range s.stateLocks {
		f.Close()
	}
	s.stateLocks = nil
	s.id.lock.Close()
	s.destroyed.Store(true)
}

// TestLeftover: a kept sandbox whose agentbox died leaves its upper layer and
// host ids, which ReapStale leaves alone; a sandbox started From them sees every
// file the first one wrote, and its Destroy removes everything. Discard removes a
// leftover nobody restarts, and ReapStale one whose record is gone.
func TestLeftover(t *testing.T) {
	testenv.RequireRoot(t)
	ws := t.TempDir()
	rec := keepRecord(t)
	if err := os.WriteFile(filepath.Join(ws, "a"), []byte("lower"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Persistent: true, Workspace: ws, Keep: rec}
	sb, err := Start(cfg, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	l := sb.Leftover()
	if l.State == "" || l.UID != sb.HostUID() || l.Init != sb.Pid() || l.InitStart == 0 {
		t.Fatalf("Leftover = %+v", l)
	}
	if out, _ := shIn(t, sb, "echo kept > /workspace/b && cat /workspace/a"); out != "lower" {
		t.Fatalf("sandbox said %q", out)
	}
	// Alive, it is nobody else's to take or discard.
	var le *LeftoverError
	if err := Discard(l); !errors.As(err, &le) {
		t.Fatalf("Discard of a live sandbox's leftover = %v", err)
	}
	first := footprint(sb)
	abandon(sb)
	t.Cleanup(func() { _ = Discard(l) }) // what a failure left; refused once Destroyed
	if err := ReapStale(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(first[len(first)-2:]); len(left) != 2 {
		t.Fatalf("ReapStale removed a kept leftover: only %q left of %q", left, first)
	}

	cfg.From = &l
	sb2, err := Start(cfg, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := shIn(t, sb2, "cat /workspace/a /workspace/b && echo more > /workspace/c && cat /workspace/c"); out != "lowerkept\nmore\n" {
		t.Fatalf("restarted sandbox said %q", out)
	}
	if l2 := sb2.Leftover(); sb2.HostUID() != l.UID || l2.State != l.State || l2.UID != l.UID || l2.Init != sb2.Pid() {
		t.Fatalf("restarted sandbox is uid %d with %+v, want %+v", sb2.HostUID(), sb2.Leftover(), l)
	}
	if n, err := sb2.Destroy(); err != nil || n != 0 {
		t.Fatalf("Destroy = %d, %v", n, err)
	}
	if left := leftovers(append(first, footprint(sb2)...)); len(left) > 0 {
		t.Fatalf("left after Destroy: %q", left)
	}

	sb3, err := Start(Config{Persistent: true, Workspace: ws, Keep: rec}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	third := footprint(sb3)
	l3 := sb3.Leftover()
	abandon(sb3)
	t.Cleanup(func() { _ = Discard(l3) })
	if err := Discard(l3); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(third); len(left) > 0 {
		t.Fatalf("left after Discard: %q", left)
	}

	rec4 := keepRecord(t)
	sb4, err := Start(Config{Persistent: true, Workspace: ws, Keep: rec4}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	fourth := footprint(sb4)
	l4 := sb4.Leftover()
	abandon(sb4)
	t.Cleanup(func() { _ = Discard(l4) })
	os.Remove(rec4)
	if err := ReapStale(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(fourth); len(left) > 0 {
		t.Fatalf("left by ReapStale once the record was gone: %q", left)
	}
}

// keepRecord makes a file for Config.Keep to name.
// TestLeave: Leave ends a kept sandbox (its processes and cgroup gone) but
// leaves its upper layer and host ids, which ReapStale spares and a Start From
// takes over with its files; a sandbox that keeps nothing is destroyed.
func TestLeave(t *testing.T) {
	testenv.RequireRoot(t)
	ws := t.TempDir()
	cfg := Config{Persistent: true, Workspace: ws, Keep: keepRecord(t)}
	sb, err := Start(cfg, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	l := sb.Leftover()
	t.Cleanup(func() { _ = Discard(l) }) // what a failure left
	if out, _ := shIn(t, sb, "sleep 1000 >/dev/null 2>&1 & echo kept > /workspace/b; cat /workspace/b"); out != "kept\n" {
		t.Fatalf("sandbox said %q", out)
	}
	fp := footprint(sb)
	cgroups, kept := fp[:len(fp)-2], fp[len(fp)-2:]
	if n, err := sb.Leave(); err != nil || n != 0 {
		t.Fatalf("Leave = %d, %v", n, err)
	}
	if left := leftovers(cgroups); len(left) > 0 {
		t.Errorf("Leave left its cgroup: %q", left)
	}
	if err := ReapStale(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(kept); len(left) != 2 {
		t.Fatalf("Leave or ReapStale removed the kept leftover: only %q left of %q", left, kept)
	}
	cfg.From = &l
	sb2, err := Start(cfg, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := shIn(t, sb2, "cat /workspace/b"); out != "kept\n" {
		t.Errorf("restarted sandbox said %q", out)
	}
	fp2 := footprint(sb2)
	if n, err := sb2.Destroy(); err != nil || n != 0 {
		t.Fatalf("Destroy = %d, %v", n, err)
	}
	if left := leftovers(append(fp, fp2...)); len(left) > 0 {
		t.Fatalf("left after Destroy: %q", left)
	}

	plain, err := Start(Config{Persistent: true, Workspace: ws}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	fp = footprint(plain)
	if n, err := plain.Leave(); err != nil || n != 0 {
		t.Fatalf("Leave of an unkept sandbox = %d, %v", n, err)
	}
	if left := leftovers(fp); len(left) > 0 {
		t.Errorf("Leave of an unkept sandbox left %q", left)
	}
}

func keepRecord(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "record")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLeftoverForged is the attacker's test of Config.From and Discard: a
// leftover is data from disk, and one that does not name exactly a dead kept
// sandbox's state directory and uid is refused without touching what it names.
func TestLeftoverForged(t *testing.T) {
	testenv.RequireRoot(t)
	ws := t.TempDir()
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, "precious"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A dead kept sandbox, whose leftover the forgeries try to twist.
	sb, err := Start(Config{Persistent: true, Workspace: ws, Keep: keepRecord(t)}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	l := sb.Leftover()
	abandon(sb)
	defer func() {
		if err := Discard(l); err != nil {
			t.Errorf("Discard of the real leftover: %v", err)
		}
	}()
	live := startPersistent(t, Config{Persistent: true, Workspace: ws, Keep: keepRecord(t)})
	// A process of the host that a forged init pid (with its true start time)
	// names: it must not be signalled.
	bystander := exec.Command("sleep", "1000")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait() }()
	byStart, _, err := procStart(bystander.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(stateRoot, statePrefix+"link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	for _, c := range []struct {
		name string
		l    Leftover
	}{
		{"outside the state root", Leftover{State: victim, UID: l.UID}},
		{"dot-dot", Leftover{State: filepath.Join(stateRoot, statePrefix+"x") + "/../../" + filepath.Base(victim), UID: l.UID}},
		{"the state root itself", Leftover{State: stateRoot, UID: l.UID}},
		{"symlink in the state root", Leftover{State: link, UID: l.UID}},
		{"another uid", Leftover{State: l.State, UID: l.UID + 2}},
		{"host root", Leftover{State: l.State, UID: 0}},
		{"a live sandbox's", live.Leftover()},
		{"a live sandbox's uid", Leftover{State: l.State, UID: live.HostUID()}},
		{"another process as its init", Leftover{State: l.State, UID: l.UID, Init: bystander.Process.Pid, InitStart: byStart}},
		{"the live sandbox's init", Leftover{State: l.State, UID: l.UID, Init: live.Pid(), InitStart: live.initStart}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var le *LeftoverError
			if err := Discard(c.l); !errors.As(err, &le) {
				t.Errorf("Discard = %v, want a *LeftoverError", err)
			}
			_, err := Start(Config{Persistent: true, Workspace: ws, From: &c.l}, Stdio{})
			if !errors.As(err, &le) {
				t.Errorf("Start From = %v, want a *LeftoverError", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(victim, "precious")); err != nil {
		t.Fatalf("a forged leftover touched its target: %v", err)
	}
	if out, _ := shIn(t, live, "echo alive"); out != "alive\n" {
		t.Fatalf("the live sandbox: %q", out)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a forged init pid's process was signalled: %v", err)
	}
	var status unix.WaitStatus
	if pid, _ := unix.Wait4(bystander.Process.Pid, &status, unix.WNOHANG, nil); pid != 0 {
		t.Fatalf("the bystander died: %v", status)
	}
	if _, err := os.Stat(l.State); err != nil {
		t.Fatalf("a forged leftover removed the real one: %v", err)
	}
}
