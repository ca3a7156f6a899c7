package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestLocalEnvConcurrent: agentbox processes starting at the same time (here
// goroutines, which share nothing of newLocalEnv but the TMPDIR) each keep their
// own state directory. Each first sweeps the state directories of killed agentbox
// processes; a sweep once took a directory another was still creating, before its
// lock, for stale, and removed it.
func TestLocalEnvConcurrent(t *testing.T) {
	testenv.RequireRoot(t)
	const n, rounds = 6, 4
	for range rounds {
		var wg sync.WaitGroup
		errs := make([]error, n)
		closers := make([]func(), n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, closers[i], errs[i] = newLocalEnv(context.Background())
			}()
		}
		wg.Wait()
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), localStatePrefix+"*"))
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
				t.Errorf("newLocalEnv %d: %v", i, errs[i])
			} else {
				closers[i]()
			}
		}
		if live != n {
			t.Fatalf("%d state directories held by a Manager, want %d (%d directories: %v)", live, n, len(dirs), dirs)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "*"+localStatePrefix+"*")); len(left) > 0 {
		t.Errorf("state directories left: %v", left)
	}
}
