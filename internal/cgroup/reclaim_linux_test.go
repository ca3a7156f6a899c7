package cgroup

import (
	"path/filepath"
	"testing"
)

// TestReclaim: 32 MiB a process of the group wrote to a file on disk and synced
// are charged to the group as page cache; Reclaim, with the process frozen,
// gives at least 24 MiB of it back, and the process goes on afterwards.
func TestReclaim(t *testing.T) {
	cg := newGroup(t, Options{MemoryBytes: 256 << 20})
	f := filepath.Join(t.TempDir(), "data")
	c := startIn(t, cg, shCmd(`read g; head -c 33554432 /dev/zero > `+f+` && sync && echo written; read g; echo on`))
	if got := c.readLine(t); got != "written" {
		t.Fatalf("the writer said %q", got)
	}
	before, err := cg.MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	if before < 32<<20 {
		t.Fatalf("the group is charged %d bytes after writing 32 MiB: its page cache is not counted", before)
	}
	if err := cg.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := cg.Reclaim(); err != nil {
		t.Fatal(err)
	}
	after, err := cg.MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	if before-after < 24<<20 {
		t.Errorf("Reclaim took the group from %d to %d bytes: want at least 24 MiB back", before, after)
	}
	if err := cg.Resume(); err != nil {
		t.Fatal(err)
	}
	c.open(t)
	if got := c.readLine(t); got != "on" {
		t.Errorf("after Reclaim the process said %q", got)
	}
}
