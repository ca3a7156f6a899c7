package env

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestOpenLocal: a local Manager works in a state directory of its own, which its
// close removes; opening one sweeps the directories killed processes left (no
// Manager holds their lock) and leaves a live one alone.
func TestOpenLocal(t *testing.T) {
	testenv.RequireRoot(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stale := filepath.Join(tmp, localPrefix+"stale")
	m, err := NewManager(Config{StateDir: stale})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil { // the directory stays, its lock released: a killed process's
		t.Fatal(err)
	}
	live := filepath.Join(tmp, localPrefix+"live")
	newManager(t, Config{StateDir: live}) // closed by the test's cleanup

	lm, closeFn, err := OpenLocal(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale state directory is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live state directory was swept: %v", err)
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, localPrefix+"*"))
	if len(dirs) != 2 {
		t.Fatalf("state directories %v, want the live one and the new one", dirs)
	}
	id := create(t, lm, CreateOptions{}).ID
	if out := sh(t, lm, id, "echo local"); out != "local\n" {
		t.Fatalf("an environment of the local manager: %q", out)
	}
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}
	if dirs, _ := filepath.Glob(filepath.Join(tmp, localPrefix+"*")); len(dirs) != 1 || dirs[0] != live {
		t.Fatalf("after close: %v, want only the live one", dirs)
	}
}

// TestOpenLocalConcurrent: agentbox processes starting at the same time (here
// goroutines, which share nothing of OpenLocal but the TMPDIR) each keep their own
// state directory. Each first sweeps the state directories of killed processes; a
// sweep once took a directory another was still creating, before its lock, for
// stale, and removed it.
func TestOpenLocalConcurrent(t *testing.T) {
	testenv.RequireRoot(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const n, rounds = 6, 4
	for range rounds {
		var wg sync.WaitGroup
		errs := make([]error, n)
		closers := make([]func() error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, closers[i], errs[i] = OpenLocal(nil, "")
			}()
		}
		wg.Wait()
		dirs, _ := filepath.Glob(filepath.Join(tmp, localPrefix+"*"))
		live := 0
		for _, d := range dirs {
			f, err := os.Open(filepath.Join(d, "lock"))
			if err != nil {
				continue
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				live++ // a Manager holds it
			}
			f.Close()
		}
		for i := range n {
			if errs[i] != nil {
				t.Errorf("OpenLocal %d: %v", i, errs[i])
			} else if err := closers[i](); err != nil {
				t.Errorf("close %d: %v", i, err)
			}
		}
		if live != n {
			t.Fatalf("%d state directories held by a Manager, want %d (%d directories: %v)", live, n, len(dirs), dirs)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*"+localPrefix+"*")); len(left) > 0 {
		t.Errorf("state directories left: %v", left)
	}
}
