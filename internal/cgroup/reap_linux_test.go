package cgroup

import (
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestReap: after a "crash" (groups never deleted, one only half created, one
// left paused by a daemon that died with a paused environment), Reap kills and
// removes every group with the prefix and no other.
func TestReap(t *testing.T) {
	requireCgroups(t)
	prefix := uniqueName("reap") + "-"
	var want []string
	var kids []*child
	for _, n := range []string{"a", "b", "c"} {
		cg := newGroup(t, Options{Name: prefix + n, Pids: 20})
		kids = append(kids, startIn(t, cg, shCmd(`read g; sleep 1000 & exec sleep 1000`)))
		want = append(want, cg.Name())
		if n == "c" {
			if err := cg.Pause(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// New crashed after its first mkdir: the group exists in one hierarchy only.
	l, err := readLayout()
	if err != nil {
		t.Fatal(err)
	}
	half := build(l, testParent, prefix+"half", 0)
	if err := os.Mkdir(half.paths[len(half.paths)-1], 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupGroup(t, half) })
	want = append(want, half.name)
	slices.Sort(want)

	keep := newGroup(t, Options{Name: uniqueName("keep")})
	kept := startIn(t, keep, shCmd(`read g; exec sleep 1000`))

	got, err := Reap(testParent, prefix)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Reap = %v, want %v", got, want)
	}
	for _, k := range kids {
		if err := k.wait(); !signaled(err, syscall.SIGKILL) {
			t.Errorf("child of a reaped group exited with %v, want SIGKILL", err)
		}
	}
	for _, name := range want {
		for _, p := range build(l, testParent, name, 0).paths {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left by Reap (%v)", p, err)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	if !alive(kept.cmd.Process.Pid) || !inGroup(kept.cmd.Process.Pid, keep) {
		t.Error("Reap touched a group without the prefix")
	}
	if again, err := Reap(testParent, prefix); err != nil || len(again) != 0 {
		t.Errorf("second Reap = %v, %v; want nothing", again, err)
	}
}

func TestReapInvalid(t *testing.T) {
	for _, tt := range []struct{ parent, prefix string }{
		{testParent, ""}, // would match every group
		{testParent, "../x"},
		{testParent, ".x"},
		{"/abs", "x"},
		{"a/../..", "x"},
	} {
		if got, err := Reap(tt.parent, tt.prefix); !errors.Is(err, ErrInvalid) || got != nil {
			t.Errorf("Reap(%q, %q) = %v, %v; want ErrInvalid", tt.parent, tt.prefix, got, err)
		}
	}
}
