package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// unifiedLayout is the host's cgroup2 mount as a v2 layout. On a hybrid host it
// has no controllers, but the core files (cgroup.procs, cgroup.kill,
// cgroup.events, cpu.stat) and clone-into-cgroup work, so the v2 code paths run
// against the real kernel here too.
func unifiedLayout(t *testing.T) layout {
	t.Helper()
	testenv.RequireRoot(t)
	l, err := readLayout()
	if err != nil {
		t.Fatal(err)
	}
	testenv.Require(t, l.unified != "", "a cgroup2 mount")
	return layout{mode: ModeV2, unified: l.unified}
}

func newV2Group(t *testing.T, opts Options) *Cgroup {
	t.Helper()
	opts.Name, opts.Parent = uniqueName("v2"), testParent
	o, err := opts.normalize()
	if err != nil {
		t.Fatal(err)
	}
	cg, err := create(unifiedLayout(t), o)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { cleanupGroup(t, cg) })
	return cg
}

// TestV2Core: clone straight into the group with FD, CPU stats from cpu.stat,
// cgroup.kill of a tree that double-forks into a new session, removal.
func TestV2Core(t *testing.T) {
	cg := newV2Group(t, Options{})
	if cg.Version() != 2 || len(cg.Paths()) != 1 {
		t.Fatalf("version %d paths %v", cg.Version(), cg.Paths())
	}
	fd, err := cg.FD()
	if err != nil {
		t.Fatal(err)
	}
	if fd2, err := cg.FD(); err != nil || fd2 != fd {
		t.Fatalf("second FD = %d, %v; want the same %d", fd2, err, fd)
	}

	spin := helperCmd("spin-cpu", "AGENTBOX_SPIN=100ms")
	spin.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	c := prepare(t, spin)
	if !inGroup(spin.Process.Pid, cg) {
		t.Fatal("child cloned with the group's FD is not in the group")
	}
	c.open(t)
	if err := c.wait(); err != nil {
		t.Fatalf("spinner: %v", err)
	}
	s := mustStats(t, cg)
	if used := s.CPUUser + s.CPUSystem; used < 80*time.Millisecond || used > 5*time.Second {
		t.Errorf("CPU %v after a 100ms spin", used)
	}

	tree := startIn(t, cg, shCmd(`read g; (setsid sh -c 'trap "" TERM HUP; echo $$; exec sleep 1000' &); echo $$; exec sleep 1000`))
	var pids []int
	for len(pids) < 2 {
		pid, err := strconv.Atoi(tree.readLine(t))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if empty, _ := cg.empty(); empty {
		t.Fatal("cgroup.events says empty with the tree running")
	}
	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d alive after Kill", pid)
		}
	}
	if err := tree.wait(); !signaled(err, syscall.SIGKILL) {
		t.Errorf("child exited with %v, want SIGKILL", err)
	}
	if err := cg.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := cg.FD(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FD after Delete: %v, want ErrNotExist", err)
	}
}

// TestV2KillForkBomb: cgroup.kill empties a group full of a fork bomb. The bomb
// also sits in a v1 group with a pids limit, so that a failure cannot take the
// host down.
func TestV2KillForkBomb(t *testing.T) {
	requireCgroups(t)
	if l, _ := readLayout(); l.version() != 1 {
		t.Skip("needs v1 for the pids limit; on a v2 host TestForkBomb covers this")
	}
	v1 := newGroup(t, Options{Pids: 32})
	v2 := newV2Group(t, Options{})
	marker := uniqueMarker("bomb", v2)
	c := prepare(t, bombCmd(marker))
	for _, cg := range []*Cgroup{v1, v2} {
		if err := cg.AddProc(c.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	c.open(t)
	if !eventually(time.Minute, func() bool { return mustStats(t, v1).PidsLimitHits > 0 }) {
		t.Fatal("bomb never reached the limit")
	}
	if err := v2.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	c.wait()
	time.Sleep(50 * time.Millisecond)
	if ids, _ := v1.tasks(); len(ids) > 0 {
		t.Fatalf("tasks left after cgroup.kill: %v", ids)
	}
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("bomb processes alive: %v", left)
	}
}

// TestV2MissingController: asking for a limit whose controller the cgroup2 root
// does not offer fails closed, names the controller, and leaves nothing behind.
func TestV2MissingController(t *testing.T) {
	l := unifiedLayout(t)
	offered := fields(filepath.Join(l.unified, "cgroup.controllers"))
	tests := []struct {
		ctl  string
		opts Options
	}{
		{Memory, Options{MemoryBytes: 64 << 20}},
		{Pids, Options{Pids: 10}},
		{CPU, Options{CPUs: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.ctl, func(t *testing.T) {
			if slices.Contains(offered, tt.ctl) {
				t.Skipf("this cgroup2 root offers %s", tt.ctl)
			}
			tt.opts.Name, tt.opts.Parent = uniqueName("v2miss"), testParent
			o, err := tt.opts.normalize()
			if err != nil {
				t.Fatal(err)
			}
			cg, err := create(l, o)
			var ce *ControllerError
			if cg != nil || !errors.As(err, &ce) || ce.Controller != tt.ctl || !errors.Is(err, ErrControllerMissing) {
				t.Fatalf("create = %v, %v; want a ControllerError for %s", cg, err, tt.ctl)
			}
			if !strings.Contains(err.Error(), tt.ctl) {
				t.Errorf("error %q does not name %s", err, tt.ctl)
			}
			if _, err := os.Stat(filepath.Join(l.unified, testParent, o.Name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("group directory left behind (%v)", err)
			}
		})
	}
}
