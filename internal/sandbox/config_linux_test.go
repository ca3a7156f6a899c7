package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

func TestConfigFill(t *testing.T) {
	c := Config{Argv: []string{"x"}}
	if err := c.fill(); err != nil {
		t.Fatal(err)
	}
	if c.Dir != DefaultDir || c.TmpSize != DefaultTmpSize || c.ShmSize != DefaultShmSize ||
		c.WorkspaceSize != DefaultWorkspaceSize {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []Config{{}, {Argv: []string{""}}, {Argv: []string{"x"}, Dir: "relative"}} {
		if err := bad.fill(); err == nil {
			t.Errorf("fill(%+v) accepted", bad)
		}
	}
}

// TestRlimitsSpec: core dumps are always off, unset limits are left alone, and a
// zero hard limit means "same as soft".
func TestRlimitsSpec(t *testing.T) {
	got := Rlimits{NoFile: Rlimit{Soft: 64}, CPU: Rlimit{Soft: 1, Hard: 2}}.spec()
	want := []nsinit.Rlimit{
		{Resource: unix.RLIMIT_CORE},
		{Resource: unix.RLIMIT_CPU, Cur: 1, Max: 2},
		{Resource: unix.RLIMIT_NOFILE, Cur: 64, Max: 64},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

func TestReportErr(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: "a", Required: true, OK: true},
		{Name: "b", Required: true},
		{Name: "c", Required: false},
		{Name: "d", Required: true},
	}}
	err := r.Err()
	var me *MissingError
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &me) || me.Mechanism != "b, d" {
		t.Errorf("Err() = %v", err)
	}
	if (Report{Checks: []Check{{Name: "a", Required: true, OK: true}}}).Err() != nil {
		t.Error("complete report has an error")
	}
}

// TestDefaultCgroupLimits: a sandbox that asks for no limit gets DefaultMemory()
// and DefaultPids in its cgroup, Unlimited gets none, and other negative limits
// are refused (issue 10: a plain run forked 2,000 processes and reached 1.9 GB).
func TestDefaultCgroupLimits(t *testing.T) {
	if m := DefaultMemory(); m <= 0 || m > MaxDefaultMemory {
		t.Fatalf("DefaultMemory() = %d", m)
	}
	for _, c := range []struct {
		name          string
		memory, pids  int64
		wantMem, want string
	}{
		{"default", 0, 0, strconv.FormatInt(DefaultMemory(), 10), strconv.Itoa(DefaultPids)},
		{"unlimited", Unlimited, Unlimited, "max", "max"},
		{"set", 64 << 20, 64, strconv.Itoa(64 << 20), "64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", "read x"}, Memory: c.memory, Pids: c.pids}, true)
			mem, pids := cgroupLimits(t, r.sb)
			r.finish(t, "\n")
			if mem != c.wantMem || pids != c.want {
				t.Errorf("memory %s, pids %s; want %s, %s", mem, pids, c.wantMem, c.want)
			}
		})
	}
	for _, bad := range []Config{{Argv: []string{"x"}, Memory: -2}, {Argv: []string{"x"}, Pids: -5}} {
		if err := bad.fill(); err == nil {
			t.Errorf("fill accepted memory %d, pids %d", bad.Memory, bad.Pids)
		}
	}
}

// cgroupLimits reads a running sandbox's memory and pids limits from its cgroup
// ("max" for none, as cgroup v2 says; v1's "no limit" value counts as max).
func cgroupLimits(t *testing.T, sb *Sandbox) (memory, pids string) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	for _, p := range sb.cg.Paths() {
		switch {
		case sb.cg.Version() == 2:
			memory, pids = read(filepath.Join(p, "memory.max")), read(filepath.Join(p, "pids.max"))
		case strings.Contains(p, "/memory/"):
			memory = read(filepath.Join(p, "memory.limit_in_bytes"))
			if n, _ := strconv.ParseUint(memory, 10, 64); n >= 1<<62 {
				memory = "max"
			}
		case strings.Contains(p, "/pids/"):
			pids = read(filepath.Join(p, "pids.max"))
		}
	}
	return memory, pids
}
