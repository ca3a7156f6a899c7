package env

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestForkRacesDestroy (attack: rm an environment while it is being forked).
// Fork finds its snapshot (taken now, or one of the chain) and only then holds
// it; Destroy does not wait for calls in progress, so the environment's own
// hold may go in between and the snapshot with it. This replays that order
// step by step: the source snapshotted twice (s2 above s1, a fork on s1),
// destroyed, then Fork's hold and release of s2. The late hold is refused and
// nothing is released twice: s1 lives for its fork, which snapshots (so boots
// on s1's layer again) and reads it.
func TestForkRacesDestroy(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	src := create(t, m, CreateOptions{}).ID
	sh(t, m, src, "echo one > f")
	s1, err := m.Snapshot(ctx, alice, src)
	if err != nil {
		t.Fatal(err)
	}
	forks, err := m.Fork(ctx, alice, src, ForkOptions{Count: 1, Snapshot: s1.ID})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := m.Snapshot(ctx, alice, src)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	late := m.snaps[s2.ID] // as Fork has it, found before the destroy
	m.mu.Unlock()
	if err := m.Destroy(ctx, alice, src); err != nil {
		t.Fatal(err)
	}
	// Fork's steps after finding the snapshot.
	if err := m.hold(late); !errors.Is(err, ErrDestroyed) {
		t.Errorf("hold of a snapshot already let go = %v, want ErrDestroyed", err)
		if err == nil {
			m.release(late)
		}
	}
	if n := snapshots(m); n != 1 {
		t.Errorf("%d snapshots kept, want 1 (s1, under the fork)", n)
	}
	if _, err := m.Snapshot(ctx, alice, forks[0].ID); err != nil {
		t.Fatalf("the fork on s1 snapshots: %v", err)
	}
	if got := sh(t, m, forks[0].ID, "cat f"); got != "one\n" {
		t.Errorf("the fork on s1 reads %q", got)
	}
}

// TestForkDiffHostile (attack: a snapshot laid with traps for the host, which
// diffs a fork's whole workspace as root). A FIFO, symlinks to the host's
// /etc/shadow (directly, through /proc and through the layer's own fd) and a
// link climbing out of a directory: the diff finishes, shows the links as their
// targets and never the host file's text.
func TestForkDiffHostile(t *testing.T) {
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil || !strings.Contains(string(shadow), "root:") {
		t.Skipf("no /etc/shadow to plant a link to: %v", err)
	}
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	src := create(t, m, CreateOptions{}).ID
	sh(t, m, src, "mkfifo fifo && ln -s /etc/shadow s1 && ln -s /proc/1/root/etc/shadow s2 && ln -s /proc/self/fd/3/../../etc/shadow s3 && mkdir d && ln -s ../../../../../../etc d/up")
	forks, err := m.Fork(ctx, alice, src, ForkOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		d   []byte
		err error
	}
	done := make(chan res, 1)
	go func() {
		d, err := m.Diff(ctx, alice, forks[0].ID)
		done <- res{d, err}
	}()
	var r res
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the fork's diff hangs (on the FIFO?)")
	}
	if r.err != nil {
		t.Fatalf("Diff: %v", r.err)
	}
	d := string(r.d)
	if !strings.Contains(d, "+/etc/shadow") || !strings.Contains(d, "s3") {
		t.Errorf("the diff does not show the links as their targets:\n%s", d)
	}
	if strings.Contains(d, "root:") {
		t.Errorf("the diff holds the host's /etc/shadow:\n%s", d)
	}
}
