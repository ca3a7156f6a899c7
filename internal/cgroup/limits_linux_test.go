package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLimitFiles checks what New writes into the kernel's files, zero meaning none.
func TestLimitFiles(t *testing.T) {
	type file struct{ ctl, name, want string }
	tests := []struct {
		name  string
		opts  Options
		files []file
	}{
		{"limits", Options{MemoryBytes: 64 << 20, Pids: 32, CPUs: 0.2}, []file{
			{Memory, "memory.limit_in_bytes", "67108864"},
			{Memory, "memory.memsw.limit_in_bytes", "67108864"}, // swap off
			{Pids, "pids.max", "32"},
			{CPU, "cpu.cfs_period_us", "100000"},
			{CPU, "cpu.cfs_quota_us", "20000"},
		}},
		{"fractional cpus round", Options{CPUs: 1.23456}, []file{
			{CPU, "cpu.cfs_quota_us", "123456"},
		}},
		{"zero is no limit", Options{}, []file{
			{Memory, "memory.limit_in_bytes", "9223372036854771712"},
			{Pids, "pids.max", "max"},
			{CPU, "cpu.cfs_quota_us", "-1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg := newGroup(t, tt.opts)
			if cg.Version() != 1 {
				t.Skip("file names below are v1; TestV2Core covers v2")
			}
			for _, f := range tt.files {
				p := filepath.Join(cg.dirs[f.ctl], f.name)
				if f.name == "memory.memsw.limit_in_bytes" && !exists(p) {
					p, f.want = filepath.Join(cg.dirs[f.ctl], "memory.swappiness"), "0"
				}
				got, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if strings.TrimSpace(string(got)) != f.want {
					t.Errorf("%s = %q, want %q", p, strings.TrimSpace(string(got)), f.want)
				}
			}
		})
	}
}

// TestMemoryLimit: a balloon of 200 MiB under a 64 MiB limit with swap off is
// OOM-killed, and Stats counts it.
func TestMemoryLimit(t *testing.T) {
	const limit = 64 << 20
	cg := newGroup(t, Options{MemoryBytes: limit})
	// Hits keeps its files open from here: the read after the kill must be the
	// kernel's new text, not the first one's.
	if h, err := cg.Hits(); err != nil || h.OOMKills != 0 {
		t.Fatalf("Hits before the balloon = %+v, %v", h, err)
	}
	c := startIn(t, cg, helperCmd("alloc"))
	err := c.wait()
	if !signaled(err, syscall.SIGKILL) {
		t.Fatalf("balloon exited with %v, want SIGKILL from the OOM killer", err)
	}
	s := mustStats(t, cg)
	t.Logf("stats: %+v", s)
	if s.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want >= 1", s.OOMKills)
	}
	mustHitsMatch(t, cg)
	// The kernel lets a task that is being OOM-killed overshoot by a few pages
	// so that it can exit.
	if s.MemoryPeak > limit+1<<20 || s.MemoryPeak < limit/2 {
		t.Errorf("MemoryPeak = %d, want between %d and about %d", s.MemoryPeak, limit/2, limit)
	}
}

// TestCPUQuota: with CPUs=0.2 a child that spins until it has used 300 ms of CPU
// takes about 1.5 s of wall time to get them. Only an upper bound on the share is
// checked: a loaded machine gives the child less, never more.
func TestCPUQuota(t *testing.T) {
	cg := newGroup(t, Options{CPUs: 0.2})
	start := time.Now()
	c := startIn(t, cg, helperCmd("spin-cpu", "AGENTBOX_SPIN=300ms"))
	if err := c.wait(); err != nil {
		t.Fatalf("spinner: %v", err)
	}
	wall := time.Since(start)
	s := mustStats(t, cg)
	used := s.CPUUser + s.CPUSystem
	ratio := used.Seconds() / wall.Seconds()
	t.Logf("cpu %v over %v wall: %.3f CPUs", used, wall, ratio)
	// The child's count includes its start-up, before it joined the group.
	if used < 250*time.Millisecond {
		t.Fatalf("the group used %v of CPU, the child 300ms: the stats miss it", used)
	}
	if ratio >= 0.5 {
		t.Errorf("used %.3f CPUs under a 0.2 quota, want at most about 0.2", ratio)
	}
}

// TestStatsCPU: a child that burns 200 ms of CPU shows at least that much, and
// the counters that saw nothing stay zero.
func TestStatsCPU(t *testing.T) {
	cg := newGroup(t, Options{Pids: 100})
	c := startIn(t, cg, helperCmd("spin-cpu", "AGENTBOX_SPIN=200ms"))
	if err := c.wait(); err != nil {
		t.Fatalf("spinner: %v", err)
	}
	s := mustStats(t, cg)
	t.Logf("stats: %+v", s)
	if used := s.CPUUser + s.CPUSystem; used < 180*time.Millisecond || used > 5*time.Second {
		t.Errorf("CPU %v, want about 200ms", used)
	}
	if s.CPUUser < 100*time.Millisecond {
		t.Errorf("CPUUser %v: a spin loop is user time", s.CPUUser)
	}
	if s.OOMKills != 0 || s.PidsLimitHits != 0 || s.Pids != 0 {
		t.Errorf("OOMKills %d, PidsLimitHits %d, Pids %d: want 0 after a clean exit", s.OOMKills, s.PidsLimitHits, s.Pids)
	}
	if s.MemoryPeak <= 0 {
		t.Errorf("MemoryPeak %d, want > 0: the Go child used memory", s.MemoryPeak)
	}
}
