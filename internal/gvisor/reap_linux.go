package gvisor

import (
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/agentbox/agentbox/internal/cgroup"
	"golang.org/x/sys/unix"
)

// statePrefix starts the name of every run's state directory in TMPDIR.
const statePrefix = "agentbox-gvisor-"

// validID is what Start names a run (and its cgroup).
var validID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^agentbox-[0-9a-f]{16}$`) })

// lockState creates the state directory's lock, held for the life of the run: a
// state directory whose lock nobody holds belongs to no live run. The lock is
// taken before its file appears under its name, so a reaper never sees it free.
func lockState(state, id string) (*os.File, error) {
	if err := os.WriteFile(filepath.Join(state, "id"), []byte(id), 0o600); err != nil {
		return nil, err
	}
	tmp := filepath.Join(state, "lock.new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(state, "lock")); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// reapStale removes what runs that died without Destroy left in dir: the state
// directories whose lock is free, and the cgroups they name. (runsc, the Sentry
// and the gofer die with agentbox: see Start; the overlay with its namespace.)
func reapStale(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, statePrefix+"*"))
	for _, state := range matches {
		f, err := os.Open(filepath.Join(state, "lock"))
		if err != nil {
			continue // a run being set up, or not one of ours
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if id, err := os.ReadFile(filepath.Join(state, "id")); err == nil && validID().Match(id) {
				cgroup.Reap("", string(id))
			}
			os.RemoveAll(state)
		}
		f.Close()
	}
}
