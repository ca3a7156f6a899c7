package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestForkTen: one environment forked into 10, each writing differently (the
// first deletes everything, as an attacker would, and rewrites the snapshot's
// file): each sees the snapshot and its own writes only, its diff says so, and
// the source, which continues above the snapshot, sees neither. Once every
// environment on the snapshot is gone, so is its layer.
func TestForkTen(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	src := create(t, m, CreateOptions{Workspace: fixture(t), Labels: map[string]string{"run": "7"}})
	sh(t, m, src.ID, "echo snap > snap && echo changed > README.md")
	forks, err := m.Fork(ctx, alice, src.ID, ForkOptions{Count: 10})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if len(forks) != 10 {
		t.Fatalf("%d forks, want 10", len(forks))
	}
	srcNow, err := m.Get(ctx, alice, src.ID)
	if err != nil || srcNow.Snapshot == "" || srcNow.State != StateRunning {
		t.Fatalf("source after the fork: %+v, %v", srcNow, err)
	}
	sh(t, m, src.ID, "echo after > after")
	for i, f := range forks {
		if f.Snapshot != srcNow.Snapshot || f.Owner != alice || f.Labels["run"] != "7" || f.ID == src.ID {
			t.Errorf("fork %d: %+v, want on snapshot %s, alice's, labelled", i, f, srcNow.Snapshot)
		}
		script := fmt.Sprintf("echo %d > own-%d && echo fork%d >> snap", i, i, i)
		if i == 0 {
			script = "rm -rf /workspace/* && echo fork0 > snap && echo 0 > own-0"
		}
		sh(t, m, f.ID, script)
	}
	list := "for f in $(find . -type f ! -name data.bin | sort); do echo \"$f=$(cat $f | tr '\\n' ' ')\"; done"
	for i, f := range forks {
		want := fmt.Sprintf("./README.md=changed \n./own-%d=%d \n./snap=snap fork%d \n./src/main.go=package main  func main() { \tprintln(\"old\") } \n", i, i, i)
		if i == 0 {
			want = "./own-0=0 \n./snap=fork0 \n"
		}
		if got := sh(t, m, f.ID, list); got != want {
			t.Errorf("fork %d sees\n%q\nwant\n%q", i, got, want)
		}
		d, err := m.Diff(ctx, alice, f.ID)
		if err != nil {
			t.Fatalf("Diff fork %d: %v", i, err)
		}
		for j := range forks {
			if has := strings.Contains(string(d), fmt.Sprintf("own-%d", j)); has != (i == j) {
				t.Errorf("fork %d's diff mentions own-%d: %v\n%s", i, j, has, d)
			}
		}
		if strings.Contains(string(d), "after") {
			t.Errorf("fork %d's diff has the source's later write:\n%s", i, d)
		}
	}
	if got := sh(t, m, src.ID, "cat snap README.md after; ls"); got != "snap\nchanged\nafter\nREADME.md\nafter\ndata.bin\nsnap\nsrc\n" {
		t.Errorf("source sees %q", got)
	}
	d, err := m.Diff(ctx, alice, src.ID)
	if err != nil || !strings.Contains(string(d), "+after") || !strings.Contains(string(d), "+changed") || strings.Contains(string(d), "own-") {
		t.Errorf("source's diff = %v\n%s", err, d)
	}

	// The layer lives while one environment uses it, the source gone or not.
	if err := m.Destroy(ctx, alice, src.ID); err != nil {
		t.Fatal(err)
	}
	for _, f := range forks[:9] {
		if err := m.Destroy(ctx, alice, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := sh(t, m, forks[9].ID, "cat snap"); got != "snap\nfork9\n" {
		t.Errorf("last fork sees %q", got)
	}
	if n := snapshots(m); n != 1 {
		t.Errorf("%d snapshots kept for the last fork, want 1", n)
	}
	if err := m.Destroy(ctx, alice, forks[9].ID); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(m); n != 0 {
		t.Errorf("%d snapshots kept with no environment on them", n)
	}
}

func snapshots(m *Manager) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.snaps)
}

// TestSnapshotContinues: the environment continues above its snapshot under
// the same id, its commands killed (processes are not snapshotted), files and
// exec working; a paused one is refused; a fork from an earlier snapshot of
// the chain gets that snapshot's files, not the later ones.
func TestSnapshotContinues(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	sh(t, m, id, "echo one > f")
	proc, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := m.Snapshot(ctx, alice, id)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if s1.EnvID != id || s1.Owner != alice || s1.Depth != 1 || !strings.HasPrefix(s1.ID, "snap-") {
		t.Errorf("snapshot = %+v", s1)
	}
	// It ended with its sandbox (how is the runner's: its init is gone).
	if res, err := m.Wait(ctx, alice, id, proc); err == nil && res.ExitCode == 0 {
		t.Errorf("a command running at the snapshot: %+v; want it ended by the snapshot", res)
	}
	if err := m.WriteFile(ctx, alice, id, "f", []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	s2, err := m.Snapshot(ctx, alice, id)
	if err != nil || s2.Depth != 2 {
		t.Fatalf("second Snapshot = %+v, %v", s2, err)
	}
	forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: 1, Snapshot: s1.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := sh(t, m, forks[0].ID, "cat f"); got != "one\n" {
		t.Errorf("fork of the first snapshot sees %q", got)
	}
	if got := sh(t, m, id, "cat f"); got != "two\n" {
		t.Errorf("source sees %q", got)
	}
	if _, err := m.Pause(ctx, alice, id, PauseOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, alice, id); !errors.Is(err, ErrPaused) {
		t.Errorf("snapshot of a paused environment = %v, want ErrPaused", err)
	}
	if _, err := m.Fork(ctx, alice, id, ForkOptions{Count: 1}); !errors.Is(err, ErrPaused) {
		t.Errorf("fork of a paused environment = %v, want ErrPaused", err)
	}
}

// TestForkLimits: counts outside 1..MaxFork are refused; a fork that would
// pass MaxEnvironments is refused whole, before anything starts (nor is the
// source snapshotted); one that fits makes them all.
func TestForkLimits(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour, MaxEnvironments: 4})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	for _, n := range []int{0, -1, MaxFork + 1} {
		if _, err := m.Fork(ctx, alice, id, ForkOptions{Count: n}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "1 to 100") {
			t.Errorf("fork of %d = %v, want ErrInvalid naming the range", n, err)
		}
	}
	for _, n := range []int{4, MaxFork} {
		if _, err := m.Fork(ctx, alice, id, ForkOptions{Count: n}); !errors.Is(err, ErrQuota) {
			t.Errorf("fork of %d past MaxEnvironments = %v, want ErrQuota", n, err)
		}
	}
	if l, _ := m.List(ctx, alice, nil); len(l) != 1 || l[0].Snapshot != "" {
		t.Errorf("after a refused fork: %+v, want the source alone, not snapshotted", l)
	}
	forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: 3})
	if err != nil || len(forks) != 3 {
		t.Fatalf("fork up to the limit = %d, %v", len(forks), err)
	}
	if _, err := m.Create(ctx, CreateOptions{Owner: alice}); !errors.Is(err, ErrQuota) {
		t.Errorf("create past the limit after a fork = %v, want ErrQuota", err)
	}
}

// TestSnapshotTenancy: another tenant can neither snapshot nor fork an
// environment, nor fork its own from someone else's snapshot: all look as if
// they did not exist.
func TestSnapshotTenancy(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	sh(t, m, id, "echo secret > s")
	s, err := m.Snapshot(ctx, alice, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, bob, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob snapshots alice's = %v, want ErrNotFound", err)
	}
	if _, err := m.Fork(ctx, bob, id, ForkOptions{Count: 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob forks alice's = %v, want ErrNotFound", err)
	}
	own := create(t, m, CreateOptions{Owner: bob}).ID
	if _, err := m.Fork(ctx, bob, own, ForkOptions{Count: 1, Snapshot: s.ID}); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob forks his own from alice's snapshot = %v, want ErrNotFound", err)
	}
	if l, _ := m.List(ctx, bob, nil); len(l) != 1 {
		t.Errorf("bob has %d environments, want 1", len(l))
	}
}

// TestSnapshotDuringExec: a synchronous command that a snapshot ends answers
// ErrBusy (run it again), not an internal error, and the environment runs the
// next one above the snapshot.
func TestSnapshotDuringExec(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	done := make(chan error, 1)
	go func() {
		_, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "echo started > s; sleep 1000"}})
		done <- err
	}()
	for end := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		// The shell creates s before it writes to it: wait for the content, or
		// the snapshot may keep an empty file (a flake under load).
		if b, err := m.ReadFile(ctx, alice, id, "s", 0, 0); err == nil && string(b) == "started\n" {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the command never started")
		}
	}
	if _, err := m.Snapshot(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "snapshot") {
			t.Errorf("exec ended by a snapshot = %v, want ErrBusy naming the snapshot", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the exec outlived the snapshot")
	}
	if got := sh(t, m, id, "cat s"); got != "started\n" {
		t.Errorf("after: %q", got)
	}
}

// TestForkHundred: the most one fork makes, each with its own layer (a file
// written in every one, read back from the last), in one call.
func TestForkHundred(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 100 sandboxes")
	}
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	sh(t, m, id, "echo base > f")
	forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: MaxFork})
	if err != nil || len(forks) != MaxFork {
		t.Fatalf("Fork of %d = %d, %v", MaxFork, len(forks), err)
	}
	for i, f := range forks {
		if err := m.WriteFile(ctx, alice, f.ID, "f", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range forks {
		if b, err := m.ReadFile(ctx, alice, f.ID, "f", 0, 0); err != nil || string(b) != fmt.Sprint(i) {
			t.Errorf("fork %d reads %q, %v", i, b, err)
		}
	}
	if got := sh(t, m, id, "cat f"); got != "base\n" {
		t.Errorf("source reads %q", got)
	}
}
