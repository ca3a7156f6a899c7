package env

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv"
)

// crashHelperEnv makes the test binary act as an agentbox daemon holding two
// environments on the state directory named by its value (one from the
// workspace in crashWorkspaceEnv, one with nothing, paused, one with a network
// holding a secret), each with a file written and
// a background command that printed two lines and runs on, print their
// footprints, and wait to be killed.
const (
	crashHelperEnv    = "AGENTBOX_ENV_TEST_CRASH"
	crashWorkspaceEnv = "AGENTBOX_ENV_TEST_CRASH_WS"
	crashSecret       = "s3cret-value-never-on-disk"
)

func runCrashHelper() {
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	m, err := NewManager(Config{StateDir: os.Getenv(crashHelperEnv)})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	ph, err := egress.NewPlaceholder("TOKEN")
	if err != nil {
		fail(err)
	}
	secret := &Network{Allow: []string{"example.com"}, Secrets: []egress.Secret{{Name: "TOKEN", Hosts: []string{"example.com"}, Placeholder: ph, Value: crashSecret}}}
	for _, o := range []CreateOptions{{Owner: alice, Workspace: os.Getenv(crashWorkspaceEnv), Labels: map[string]string{"k": "v"}}, {Owner: alice}, {Owner: alice, Network: secret}} {
		info, err := m.Create(ctx, o)
		if err != nil {
			fail(err)
		}
		if err := m.WriteFile(ctx, alice, info.ID, "f", []byte("x")); err != nil {
			fail(err)
		}
		p, err := m.Start(ctx, alice, info.ID, ExecRequest{Argv: []string{"sh", "-c", "sleep 1000 & setsid sleep 1001 & echo one; echo two >&2; wait"}})
		if err != nil {
			fail(err)
		}
		evs, err := m.Events(ctx, alice, info.ID, p, 0)
		if err != nil {
			fail(err)
		}
		<-evs
		<-evs
		f := footprintOf(m.envs[info.ID])
		if o.Workspace == "" && o.Network == nil {
			// Frozen, its init cannot die of its parent-death signal: the
			// restore kills it through its old cgroup.
			if _, err := m.Pause(ctx, alice, info.ID, PauseOptions{}); err != nil {
				fail(err)
			}
		}
		fmt.Println(info.ID, f.uid, f.state, f.reserve, strings.Join(f.cgroups, ","), m.envs[info.ID].ns().Pid())
	}
	fmt.Println("ready")
	select {}
}

// TestRestartRestoresDeadInit: a daemon SIGKILLed while it holds environments
// with running commands leaves no process (the inits die with it, their pid
// namespaces with them) but keeps each one's upper layer and records; NewManager
// in another process on the same state directory restores them: listed with
// their owner and labels, every file there, the commands' events kept and ended
// by a "lost" exit, exec working; a network that held a secret (never written to
// disk) reaches nothing. Destroy then leaves nothing, old or new.
//
// The dead daemon's inits are orphans: whoever reaps them is the daemon's
// supervisor's business (pid 1 here reaps nothing), so the test is that
// supervisor, a subreaper, and checks that no zombie of theirs is left either.
func TestRestartRestoresDeadInit(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("slow: a helper daemon")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	state := t.TempDir()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+state, crashWorkspaceEnv+"="+fixture(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	var prints []footprint
	var ids []string
	var inits []int
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		f := strings.Fields(sc.Text())
		if len(f) != 6 {
			t.Fatalf("helper said %q", sc.Text())
		}
		fp := footprint{state: f[2], reserve: f[3], cgroups: strings.Split(f[4], ",")}
		fp.uid, _ = strconv.Atoi(f[1])
		pid, _ := strconv.Atoi(f[5])
		prints = append(prints, fp)
		ids = append(ids, f[0])
		inits = append(inits, pid)
	}
	if len(prints) != 3 {
		t.Fatalf("helper gave %d footprints", len(prints))
	}
	for _, f := range prints {
		running := settle(func() bool { return len(procsOfUID(f.uid)) >= 3 })
		if !running || len(mountsUnder(f.state)) == 0 || len(f.cgroups) == 0 {
			t.Fatalf("the helper's environment is not running: %+v", f)
		}
	}

	cmd.Process.Kill()
	cmd.Wait()
	killed = true
	reaped := func(pid int) bool {
		n, err := unix.Wait4(pid, nil, unix.WNOHANG, nil)
		return n == pid || err != nil
	}
	for i, pid := range inits {
		if i == 1 {
			continue // paused: alive until the restore
		}
		if !settle(func() bool { return reaped(pid) }) {
			t.Errorf("the dead daemon's init %d did not die", pid)
		}
	}
	if len(procsOfUID(prints[1].uid)) == 0 {
		t.Errorf("the paused environment's processes died with the daemon: the test proves nothing")
	}

	if b, _ := os.ReadFile(filepath.Join(state, "envs", ids[2], recordName)); !strings.Contains(string(b), `"withheld":true`) || strings.Contains(string(b), crashSecret) {
		t.Errorf("the record of an environment with a secret: %s", b)
	}
	t0 := time.Now()
	m, err := NewManager(Config{StateDir: state})
	if err != nil {
		t.Fatalf("NewManager after the crash: %v", err)
	}
	t.Logf("NewManager took %v to restore %d environments", time.Since(t0).Round(time.Millisecond), len(ids))
	t.Cleanup(func() { m.Close() })
	if !settle(func() bool { return reaped(inits[1]) }) {
		t.Errorf("the paused environment's old init %d was not killed", inits[1])
	}
	for _, f := range prints {
		if !settle(func() bool { return len(procsOfUID(f.uid)) == 0 }) {
			t.Errorf("processes of a dead daemon's environment alive: %v", procsOfUID(f.uid))
		}
		if z := zombiesOfUID(f.uid + 1); len(z) > 0 {
			t.Errorf("zombies of the dead daemon's init (host uid %d) left: %v", f.uid+1, z)
		}
	}
	ctx := context.Background()
	list, err := m.List(ctx, alice, nil)
	if err != nil || len(list) != 3 || list[0].ID != ids[0] || list[1].ID != ids[1] || list[2].ID != ids[2] || list[0].Labels["k"] != "v" {
		t.Fatalf("List after the restart = %+v, %v; want %v", list, err, ids)
	}
	// The secret was never on disk, so the restored network fails closed.
	if n := list[2].Network; n == nil || len(n.Allow) != 0 || len(n.Secrets) != 0 {
		t.Errorf("the restored network that held a secret: %+v", n)
	}

	if _, err := m.Get(ctx, bob, ids[0]); err == nil {
		t.Errorf("another tenant sees a restored environment")
	}
	for i, id := range ids {
		if got := sh(t, m, id, "cat f"); got != "x" {
			t.Errorf("%s: f = %q after the restart", id, got)
		}
		if i == 0 {
			if got := sh(t, m, id, "cat README.md"); got != "hello\n" {
				t.Errorf("%s: the workspace's lower layer: README.md = %q", id, got)
			}
		}
		// The events before the crash, exactly, then the loss.
		var evs []Event
		ch, err := m.Events(ctx, alice, id, "p1", 0)
		if err != nil {
			t.Fatal(err)
		}
		for ev := range ch {
			evs = append(evs, ev)
		}
		// stdout's and stderr's lines race each other.
		if len(evs) != 3 || evs[0].Seq != 1 || evs[1].Seq != 2 || string(evs[0].Data)+string(evs[1].Data) != map[string]string{EventStdout: "one\ntwo\n", EventStderr: "two\none\n"}[evs[0].Kind] ||
			evs[2].Seq != 3 || evs[2].Kind != EventExit || evs[2].Result == nil || evs[2].Result.Error != lostError {
			t.Fatalf("%s: events of the lost command: %+v", id, evs)
		}
		ch, _ = m.Events(ctx, alice, id, "p1", 2)
		if ev, ok := <-ch; !ok || ev.Seq != 3 {
			t.Errorf("%s: events after 2: %+v", id, ev)
		}
		if res, err := m.Wait(ctx, alice, id, "p1"); err != nil || res.Error != lostError {
			t.Errorf("%s: Wait on the lost command = %+v, %v", id, res, err)
		}
		if p, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"true"}}); err != nil || p != "p2" {
			t.Errorf("%s: a new command after the restart is %q, %v; want p2", id, p, err)
		}
	}
	var after []footprint
	for _, id := range ids {
		after = append(after, footprintOf(envOf(t, m, id)))
		if err := m.Destroy(ctx, alice, id); err != nil {
			t.Errorf("Destroy %s: %v", id, err)
		}
	}
	for _, f := range append(prints, after...) {
		f.check(t)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "envs")); len(ents) != 0 {
		t.Errorf("state directories left: %v", ents)
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
}

// zombiesOfUID lists the zombies of host uid uid.
func zombiesOfUID(uid int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err == nil && strings.Contains(string(b), "\nUid:\t"+strconv.Itoa(uid)+"\t") && strings.Contains(string(b), "\nState:\tZ") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestStateDirLocked: a second Manager on the same state directory fails with
// ErrBusy rather than reap the first one's environments.
func TestStateDirLocked(t *testing.T) {
	state := t.TempDir()
	m := newManager(t, Config{StateDir: state})
	id := create(t, m, CreateOptions{}).ID
	if _, err := NewManager(Config{StateDir: state}); err == nil || !strings.Contains(err.Error(), "used by another") {
		t.Fatalf("second NewManager = %v", err)
	}
	if out := sh(t, m, id, "echo alive"); out != "alive\n" {
		t.Fatalf("first Manager's environment: %q", out)
	}
}
