package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bombCmd is a fork bomb that never gives up: every process loops forking and
// ignores failures, so at the pids limit all of them keep trying. (A shell bomb
// is no good: dash exits when a fork fails, and the bomb dies out by itself.)
// The marker in its command line makes its processes findable anywhere.
func bombCmd(marker string) *exec.Cmd {
	return exec.Command("perl", "-e", "<STDIN>; fork while 1", marker)
}

// marked counts live processes whose command line holds marker.
func marked(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestForkBomb: the pids limit holds a fork bomb, pids.events counts the refused
// forks, and Kill empties the group with nothing escaping. Several rounds, since
// an escape between listing and killing would be a race.
func TestForkBomb(t *testing.T) {
	const limit = 32
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			cg := newGroup(t, Options{Pids: limit})
			marker := uniqueMarker("bomb", cg)
			c := startIn(t, cg, bombCmd(marker))
			if !eventually(time.Minute, func() bool { return mustStats(t, cg).PidsLimitHits > 0 }) {
				t.Fatalf("bomb never reached the limit: %+v", mustStats(t, cg))
			}
			for range 10 {
				if s := mustStats(t, cg); s.Pids > limit {
					t.Fatalf("%d tasks under a limit of %d", s.Pids, limit)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if cg.Version() == 1 {
				assertFreezeHolds(t, cg)
			}
			s := mustStats(t, cg)
			live, _ := cg.tasks()
			if len(live) < limit/2 {
				t.Fatalf("only %d live tasks: the bomb died out by itself", len(live))
			}
			start := time.Now()
			if err := cg.Kill(); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			t.Logf("%d live tasks, refused forks %d; Kill took %v", len(live), s.PidsLimitHits, time.Since(start))
			c.wait()
			time.Sleep(50 * time.Millisecond) // a survivor would fork meanwhile
			if ids, err := cg.tasks(); err != nil || len(ids) > 0 {
				t.Fatalf("after Kill the group holds %v (err %v)", ids, err)
			}
			if left := marked(marker); len(left) > 0 {
				t.Fatalf("bomb processes alive after Kill: %v", left)
			}
		})
	}
}

// TestKillPidHopping: eight chains in which each process forks and exits at once,
// so the group's pids are never the same twice: a kill by listed pid always
// aims at the past. Kill still empties the group.
func TestKillPidHopping(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			cg := newGroup(t, Options{})
			marker := uniqueMarker("hop", cg)
			c := startIn(t, cg, exec.Command("perl", "-e", "<STDIN>; fork for 1..3; while (1) { exit if fork }", marker))
			var first []int
			if !eventually(time.Minute, func() bool { first, _ = cg.tasks(); return len(first) >= 4 }) {
				t.Fatalf("chains not running: %v", first)
			}
			if !eventually(time.Minute, func() bool { later, _ := cg.tasks(); return !slices.Equal(first, later) }) {
				t.Fatalf("pids did not change (%v): the chains are not hopping", first)
			}
			if err := cg.Kill(); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			c.wait()
			time.Sleep(50 * time.Millisecond)
			if ids, err := cg.tasks(); err != nil || len(ids) > 0 {
				t.Fatalf("after Kill the group holds %v (err %v)", ids, err)
			}
			if left := marked(marker); len(left) > 0 {
				t.Fatalf("chain processes alive after Kill: %v", left)
			}
		})
	}
}

// assertFreezeHolds checks what Kill relies on in v1: while the group is frozen
// its task list does not change and no fork is even attempted; once thawed, the
// bomb tries again at once.
func assertFreezeHolds(t *testing.T, cg *Cgroup) {
	t.Helper()
	if err := freeze(cg.dirs[Freezer], time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	before, _ := cg.tasks()
	refused := mustStats(t, cg).PidsLimitHits
	time.Sleep(50 * time.Millisecond)
	after, _ := cg.tasks()
	refusedFrozen := mustStats(t, cg).PidsLimitHits
	mustHitsMatch(t, cg)
	if err := thaw(cg.dirs[Freezer]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) || refusedFrozen != refused {
		t.Fatalf("frozen bomb changed: %d tasks then %d, refused forks %d then %d",
			len(before), len(after), refused, refusedFrozen)
	}
	if !eventually(time.Minute, func() bool { return mustStats(t, cg).PidsLimitHits > refused }) {
		t.Fatal("thawed bomb does not fork: the freeze test proves nothing")
	}
}

// TestKillStubborn: processes that ignore signals, start new sessions or
// double-fork (and so leave the direct child's process tree) all die.
func TestKillStubborn(t *testing.T) {
	tests := []struct {
		name string
		cmd  func() *exec.Cmd
		pids int // pids the child prints, besides its own
	}{
		{"ignores TERM HUP INT", func() *exec.Cmd {
			return shCmd(`trap '' TERM HUP INT; read g; sh -c 'trap "" TERM HUP INT; exec sleep 1000' & echo $!; wait`)
		}, 1},
		{"new session", func() *exec.Cmd {
			return shCmd(`read g; setsid sh -c 'echo $$; exec sleep 1000' & wait`)
		}, 1},
		{"double fork", func() *exec.Cmd {
			return shCmd(`read g; (sleep 1000 & echo $!); exec sleep 1000`)
		}, 1},
		{"double fork, new session, respawning", func() *exec.Cmd {
			return shCmd(`read g; (setsid sh -c 'trap "" TERM HUP INT; echo $$; while :; do sleep 1; done' &); exec sleep 1000`)
		}, 1},
		{"many threads", func() *exec.Cmd { return helperCmd("sleep") }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg := newGroup(t, Options{})
			c := startIn(t, cg, tt.cmd())
			pids := []int{c.cmd.Process.Pid}
			for len(pids) < 1+tt.pids {
				for _, f := range strings.Fields(c.readLine(t)) {
					pid, err := strconv.Atoi(f)
					if err != nil {
						t.Fatalf("child printed %q", f)
					}
					pids = append(pids, pid)
				}
			}
			for _, pid := range pids {
				if !eventually(time.Minute, func() bool { return alive(pid) && inGroup(pid, cg) }) {
					t.Fatalf("pid %d not running in the group before Kill", pid)
				}
			}
			if err := cg.Kill(); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("pid %d alive after Kill", pid)
				}
			}
			if err := c.wait(); !signaled(err, syscall.SIGKILL) {
				t.Errorf("direct child exited with %v, want SIGKILL", err)
			}
			if err := cg.Delete(); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		})
	}
}

// TestLifecycleEdges: Kill of an empty group returns at once (not after its kill
// timeout of two minutes); Delete is idempotent; Kill after Delete has nothing to
// do; AddProc rejects bad pids.
func TestLifecycleEdges(t *testing.T) {
	const killTimeout = 2 * time.Minute
	cg := newGroup(t, Options{KillTimeout: killTimeout})
	start := time.Now()
	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill of an empty group: %v", err)
	}
	if d := time.Since(start); d > killTimeout/2 {
		t.Errorf("Kill of an empty group took %v", d)
	}
	for _, pid := range []int{0, -1} {
		if err := cg.AddProc(pid); err == nil {
			t.Errorf("AddProc(%d) succeeded", pid)
		}
	}
	if err := cg.AddProc(1 << 30); err == nil {
		t.Error("AddProc of a pid that does not exist succeeded")
	}
	for i := range 2 {
		if err := cg.Delete(); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill after Delete: %v", err)
	}
	if err := cg.AddProc(os.Getpid()); err == nil {
		t.Fatal("AddProc after Delete succeeded")
	}
}

// TestDeleteBusy: Delete refuses a group with a live task and says why.
func TestDeleteBusy(t *testing.T) {
	cg := newGroup(t, Options{})
	startIn(t, cg, shCmd(`read g; exec sleep 1000`))
	err := cg.Delete()
	if err == nil || !strings.Contains(err.Error(), "Kill first") {
		t.Fatalf("Delete of a busy group: %v, want an error saying to Kill first", err)
	}
}

// TestKillTimeout: when tasks cannot die, Kill gives up after KillTimeout with
// ErrTimeout. On v1 a frozen parent group keeps its children frozen whatever they
// write to their own freezer.state, so a SIGKILLed task in it cannot run to exit.
func TestKillTimeout(t *testing.T) {
	requireCgroups(t)
	l, err := readLayout()
	if err != nil {
		t.Fatal(err)
	}
	if l.version() != 1 {
		t.Skip("v2's freezer lets SIGKILL through, so it cannot hold a task")
	}
	parent := testParent + "/" + uniqueName("frozen")
	t.Cleanup(func() {
		for _, dir := range parentDirs(l, parent) {
			if err := rmdir(dir); err != nil {
				t.Error(err)
			}
		}
	})
	const timeout = 300 * time.Millisecond
	cg, err := New(Options{Name: "held", Parent: parent, KillTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupGroup(t, cg) })
	held := filepath.Dir(cg.dirs[Freezer])
	c := startIn(t, cg, shCmd(`read g; exec sleep 1000`))
	t.Cleanup(func() { thaw(held) }) // before the child's reaping, which runs earlier
	if err := freeze(held, time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = cg.Kill()
	took := time.Since(start)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "1 tasks left") {
		t.Fatalf("Kill in a frozen parent: %v, want ErrTimeout with 1 task left", err)
	}
	// Not before its own timeout, and on it rather than on the default one (a
	// loaded machine only makes it later).
	if took < timeout || took >= DefaultKillTimeout {
		t.Errorf("Kill gave up after %v, want %v or a little more", took, timeout)
	}
	t.Logf("error after %v: %v", took, err)
	if err := thaw(held); err != nil {
		t.Fatal(err)
	}
	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill after thawing the parent: %v", err)
	}
	if err := c.wait(); !signaled(err, syscall.SIGKILL) {
		t.Errorf("child exited with %v, want SIGKILL", err)
	}
}

// TestConcurrentGroups: groups with distinct names live side by side; the same
// name twice at once gives one group and ErrExist for every other caller.
func TestConcurrentGroups(t *testing.T) {
	requireCgroups(t)
	t.Run("distinct", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if err := lifecycle(Options{Name: uniqueName("conc"), Parent: testParent, Pids: 16, MemoryBytes: 32 << 20, CPUs: 0.5}); err != nil {
					t.Errorf("group %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	})
	t.Run("same name", func(t *testing.T) {
		name := uniqueName("same")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var made []*Cgroup
		var exist int
		for range 8 {
			wg.Go(func() {
				cg, err := New(Options{Name: name, Parent: testParent})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					made = append(made, cg)
				case errors.Is(err, ErrExist):
					exist++
				default:
					t.Errorf("New: %v", err)
				}
			})
		}
		wg.Wait()
		for _, cg := range made {
			t.Cleanup(func() { cleanupGroup(t, cg) })
		}
		if len(made) != 1 || exist != 7 {
			t.Fatalf("%d created and %d ErrExist, want 1 and 7", len(made), exist)
		}
	})
}

// lifecycle runs one group from New to Delete with a gated child in it.
func lifecycle(opts Options) error {
	cg, err := New(opts)
	if err != nil {
		return err
	}
	cmd := shCmd(`read g; exec sleep 1000`)
	gate, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	addErr := cg.AddProc(cmd.Process.Pid)
	gate.Write([]byte("\n"))
	killErr := cg.Kill()
	if addErr != nil || killErr != nil {
		cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	if addErr == nil && killErr == nil && !signaled(waitErr, syscall.SIGKILL) {
		return fmt.Errorf("child exited with %v, want SIGKILL", waitErr)
	}
	return errors.Join(addErr, killErr, cg.Delete())
}
