package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFrozen: while fn runs, a process of the group that appends to a file as fast
// as it can makes no progress; before and after, it does. This is what lets the
// environment service read an overlay's upper layer at rest.
func TestFrozen(t *testing.T) {
	cg := newGroup(t, Options{})
	out := filepath.Join(t.TempDir(), "count")
	startIn(t, cg, shCmd(`read g; while :; do echo >> `+out+`; done`))
	size := func() int64 {
		fi, err := os.Stat(out)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	if !eventually(time.Minute, func() bool { return size() > 0 }) {
		t.Fatal("writer never wrote")
	}
	var during [2]int64
	err := cg.Frozen(func() error {
		during[0] = size()
		time.Sleep(100 * time.Millisecond)
		during[1] = size()
		return nil
	})
	if err != nil {
		t.Fatalf("Frozen: %v", err)
	}
	if during[0] == 0 || during[0] != during[1] {
		t.Errorf("the writer moved from %d to %d while frozen", during[0], during[1])
	}
	after := size()
	if !eventually(time.Minute, func() bool { return size() > after }) {
		t.Errorf("the writer did not resume after Frozen (still %d)", after)
	}
	// fn's error comes back, and the group is thawed anyway.
	if err := cg.Frozen(func() error { return os.ErrClosed }); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Frozen(fn failing) = %v, want fn's error", err)
	}
	after = size()
	if !eventually(time.Minute, func() bool { return size() > after }) {
		t.Errorf("the writer did not resume after a failed fn")
	}
}

// TestPause: a paused group burns no CPU (its cgroup's counters stand still, not
// just the wall clock), Frozen inside the pause does not end it, and Resume lets
// the same process go on. Kill ends a pause: nothing of the group survives. On
// the host's layout (the v1 freezer on a hybrid host) and on its cgroup2 mount
// (cgroup.freeze, a core file even without controllers).
func TestPause(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(*testing.T, Options) *Cgroup
	}{{"host", newGroup}, {"v2", newV2Group}} {
		t.Run(tc.name, func(t *testing.T) { testPause(t, tc.make(t, Options{})) })
	}
}

func testPause(t *testing.T, cg *Cgroup) {
	out := filepath.Join(t.TempDir(), "count")
	startIn(t, cg, shCmd(`read g; while :; do echo >> `+out+`; done`))
	size := func() int64 {
		fi, err := os.Stat(out)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	cpu := func() time.Duration {
		st, err := cg.Stats()
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		return st.CPUUser + st.CPUSystem
	}
	if !eventually(time.Minute, func() bool { return size() > 0 }) {
		t.Fatal("writer never wrote")
	}
	if err := cg.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if !cg.Paused() {
		t.Error("Paused() = false after Pause")
	}
	if err := cg.Pause(); err != nil {
		t.Errorf("Pause again: %v", err)
	}
	size0, cpu0 := size(), cpu()
	time.Sleep(200 * time.Millisecond)
	if err := cg.Frozen(func() error { return nil }); err != nil {
		t.Errorf("Frozen while paused: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if d := cpu() - cpu0; d > 5*time.Millisecond {
		t.Errorf("the paused group used %v of CPU", d)
	}
	if s := size(); s != size0 {
		t.Errorf("the writer moved from %d to %d while paused (Frozen ended the pause?)", size0, s)
	}
	if err := cg.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if cg.Paused() {
		t.Error("Paused() = true after Resume")
	}
	if !eventually(time.Minute, func() bool { return size() > size0 }) {
		t.Fatalf("the writer did not go on after Resume (still %d)", size0)
	}
	if err := cg.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill while paused: %v", err)
	}
	if ids, err := cg.tasks(); err != nil || len(ids) != 0 {
		t.Errorf("after Kill of a paused group: tasks %v, %v", ids, err)
	}
	if cg.Paused() {
		t.Error("Paused() = true after Kill")
	}
}
