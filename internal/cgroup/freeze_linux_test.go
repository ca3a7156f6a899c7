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
