package env

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestCloseKeeps: Close with KeepOnClose ends an environment's processes and
// cgroup but leaves its files and record, and the next Manager restores it with
// them, the command that was running ended as lost; what no restart restores (a
// pool member, a fork and its parent on snapshot layers) it destroys. Close without it (the
// default) leaves nothing at all.
func TestCloseKeeps(t *testing.T) {
	testenv.RequireRoot(t)
	ctx := context.Background()
	state := t.TempDir()
	m, err := NewManager(Config{StateDir: state, KeepOnClose: true, Pools: []Pool{{Min: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	id := create(t, m, CreateOptions{Workspace: fixture(t)}).ID
	parent := create(t, m, CreateOptions{}).ID
	forks, err := m.Fork(ctx, alice, parent, ForkOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !settle(func() bool { return len(members(m)) == 1 }) {
		t.Fatal("the pool has no member")
	}
	destroyed := []footprint{footprintOf(members(m)[0]), footprintOf(envOf(t, m, forks[0].ID)), footprintOf(envOf(t, m, parent))}
	sh(t, m, id, "echo x > f")
	if _, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	before := footprintOf(envOf(t, m, id))
	if !settle(func() bool { return len(procsOfUID(before.uid)) >= 1 }) {
		t.Fatalf("the command is not running: %v", procsOfUID(before.uid))
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, f := range destroyed {
		f.check(t)
	}
	if p := procsOfUID(before.uid); len(p) > 0 {
		t.Errorf("processes left running by Close: %v", p)
	}
	for _, p := range before.cgroups {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("cgroup %s left by Close", p)
		}
	}
	for _, p := range []string{before.state, before.reserve, filepath.Join(state, "envs", id, recordName)} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("Close removed what the restart needs: %v", err)
		}
	}

	m, err = NewManager(Config{StateDir: state})
	if err != nil {
		t.Fatalf("NewManager after Close: %v", err)
	}
	list, err := m.List(ctx, alice, nil)
	if err != nil || len(list) != 1 || list[0].ID != id {
		m.Close()
		t.Fatalf("List after the restart = %+v, %v; want only %s (not the pool member, the fork or its parent)", list, err, id)
	}
	if got := sh(t, m, id, "cat f README.md"); got != "x\nhello\n" {
		t.Errorf("files after the restart: %q", got)
	}
	if res, err := m.Wait(ctx, alice, id, "p1"); err != nil || res.Error != lostError {
		t.Errorf("Wait on the command Close ended = %+v, %v; want it lost", res, err)
	}
	after := []footprint{before, footprintOf(envOf(t, m, id))}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, f := range after {
		f.check(t)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "envs")); len(ents) > 0 {
		t.Errorf("environment state left by a Close that destroys: %v", ents)
	}
}
