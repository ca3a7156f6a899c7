package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNewMissingController: on v1, a limit whose hierarchy is not mounted, or no
// freezer (Kill needs it), fails closed with the controller named and nothing
// created. The layouts are the host's with hierarchies taken away.
func TestNewMissingController(t *testing.T) {
	requireCgroups(t)
	host, err := readLayout()
	if err != nil {
		t.Fatal(err)
	}
	if host.version() != 1 {
		t.Skip("v1 layouts; TestV2MissingController covers v2")
	}
	without := func(ctls ...string) layout {
		l := layout{mode: host.mode, unified: host.unified, v1: map[string]string{}}
		for k, v := range host.v1 {
			l.v1[k] = v
		}
		for _, c := range ctls {
			delete(l.v1, c)
		}
		return l
	}
	tests := []struct {
		name string
		l    layout
		opts Options
		want string
	}{
		{"no freezer", without(Freezer), Options{}, Freezer},
		{"memory limit, no memory", without(Memory), Options{MemoryBytes: 64 << 20}, Memory},
		{"pids limit, no pids", without(Pids), Options{Pids: 10}, Pids},
		{"cpu limit, no cpu", without(CPU), Options{CPUs: 1}, CPU},
		{"no cgroups at all", layout{v1: map[string]string{}}, Options{}, Freezer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Name, tt.opts.Parent = uniqueName("miss"), testParent
			o, err := tt.opts.normalize()
			if err != nil {
				t.Fatal(err)
			}
			cg, err := create(tt.l, o)
			var ce *ControllerError
			if cg != nil || !errors.As(err, &ce) || ce.Controller != tt.want {
				t.Fatalf("create = %v, %v; want a ControllerError for %s", cg, err, tt.want)
			}
			for _, mount := range host.v1 {
				if _, err := os.Stat(filepath.Join(mount, testParent, o.Name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("directory left in %s (%v)", mount, err)
				}
			}
		})
	}
	t.Run("optional controllers may be missing", func(t *testing.T) {
		o, _ := Options{Name: uniqueName("opt"), Parent: testParent}.normalize()
		cg, err := create(without(Memory, Pids, CPU, CPUAcct), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cleanupGroup(t, cg) })
		if len(cg.Paths()) != 1 {
			t.Errorf("paths %v, want the freezer only", cg.Paths())
		}
		if s, err := cg.Stats(); err != nil || s != (Stats{}) {
			t.Errorf("Stats without the controllers = %+v, %v; want zeros", s, err)
		}
	})
}

// TestNewExisting: a name in use gives ErrExist and leaves the existing group,
// and the process in it, alone.
func TestNewExisting(t *testing.T) {
	cg := newGroup(t, Options{Pids: 10})
	c := startIn(t, cg, shCmd(`read g; exec sleep 1000`))
	again, err := New(Options{Name: cg.Name(), Parent: testParent})
	if again != nil || !errors.Is(err, ErrExist) {
		t.Fatalf("New with a taken name = %v, %v; want ErrExist", again, err)
	}
	for _, p := range cg.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("existing group damaged: %v", err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if !alive(c.cmd.Process.Pid) || !inGroup(c.cmd.Process.Pid, cg) {
		t.Error("process of the existing group disturbed")
	}
}

// TestDefaultParent: without Parent, groups go under DefaultParent in every
// hierarchy.
func TestDefaultParent(t *testing.T) {
	requireCgroups(t)
	cg, err := New(Options{Name: "test-" + filepath.Base(testParent) + "-default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cleanupGroup(t, cg)
		l, _ := readLayout()
		for _, dir := range parentDirs(l, DefaultParent) {
			unix.Rmdir(dir) // fails, rightly, if real groups live there
		}
	})
	for _, p := range cg.Paths() {
		if filepath.Base(filepath.Dir(p)) != DefaultParent {
			t.Errorf("%s is not under %s", p, DefaultParent)
		}
	}
}
