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

	"github.com/agentbox/agentbox/internal/testenv"
)

// crashHelperEnv makes the test binary act as an agentbox daemon holding two
// environments on the state directory named by its value (one from the
// workspace in crashWorkspaceEnv, one with a background command), print their
// footprints, and wait to be killed.
const (
	crashHelperEnv    = "AGENTBOX_ENV_TEST_CRASH"
	crashWorkspaceEnv = "AGENTBOX_ENV_TEST_CRASH_WS"
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
	for _, o := range []CreateOptions{{Owner: alice, Workspace: os.Getenv(crashWorkspaceEnv)}, {Owner: alice}} {
		info, err := m.Create(ctx, o)
		if err != nil {
			fail(err)
		}
		if _, err := m.Start(ctx, alice, info.ID, ExecRequest{Argv: []string{"sh", "-c", "sleep 1000 & setsid sleep 1001 & wait"}}); err != nil {
			fail(err)
		}
		if err := m.WriteFile(ctx, alice, info.ID, "f", []byte("x")); err != nil {
			fail(err)
		}
		f := footprintOf(m.envs[info.ID])
		fmt.Println(info.ID, f.uid, f.state, f.reserve, strings.Join(f.cgroups, ","))
	}
	fmt.Println("ready")
	select {}
}

// TestRestart: a daemon SIGKILLed while it holds environments leaves no process
// (the inits die with it, their pid namespaces with them) but leaves mounts,
// cgroups, uid reservations and state directories; NewManager in a fresh process
// on the same state directory (its Recover) removes all of them. Environments are
// reaped, not recovered.
func TestRestart(t *testing.T) {
	testenv.RequireRoot(t)
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
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			t.Fatalf("helper said %q", sc.Text())
		}
		fp := footprint{state: f[2], reserve: f[3], cgroups: strings.Split(f[4], ",")}
		fp.uid, _ = strconv.Atoi(f[1])
		prints = append(prints, fp)
		ids = append(ids, f[0])
	}
	if len(prints) != 2 {
		t.Fatalf("helper gave %d footprints", len(prints))
	}
	for _, f := range prints {
		// Start returns before the background command has forked its sleeps.
		running := settle(func() bool { return len(procsOfUID(f.uid)) >= 3 })
		if !running || len(mountsUnder(f.state)) == 0 || len(f.cgroups) == 0 {
			t.Fatalf("the helper's environment is not running: %+v", f)
		}
	}

	cmd.Process.Kill()
	cmd.Wait()
	killed = true
	for _, f := range prints {
		if !settle(func() bool { return len(procsOfUID(f.uid)) == 0 }) {
			t.Errorf("processes of a dead daemon's environment alive: %v", procsOfUID(f.uid))
		}
		// What Recover is for. Another test binary running at the same time
		// (go test ./... runs packages in parallel) may reap them first with
		// sandbox.ReapStale, which is host-wide: say so rather than fail.
		if len(mountsUnder(f.state)) == 0 {
			t.Logf("the mount under %s was already reaped by another process", f.state)
		}
		if _, err := os.Stat(f.reserve); err != nil {
			t.Logf("the reservation %s was already reaped by another process", f.reserve)
		}
	}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(state, "envs", id)); err != nil {
			t.Errorf("no state directory left before Recover: %v", err)
		}
	}

	m, err := NewManager(Config{StateDir: state})
	if err != nil {
		t.Fatalf("NewManager after the crash: %v", err)
	}
	for _, f := range prints {
		f.check(t)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "envs")); len(ents) != 0 {
		t.Errorf("state directories left: %v", ents)
	}
	for _, id := range ids {
		if _, err := m.Get(context.Background(), alice, id); err == nil {
			t.Errorf("environment %s recovered", id)
		}
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
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
