package env

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/runner"
)

// localPrefix names the state directories of OpenLocal's managers.
const localPrefix = "agentbox-agent-"

// OpenLocal starts a Manager for one agentbox process that runs its environments
// in process (agent, grade, eval), on a private state directory in os.TempDir,
// with templates from images (nil: none), every environment at level isolation
// unless its CreateOptions say otherwise (Config.Isolation);
// closing it destroys what is left and removes the directory. First it sweeps the
// state directories such processes left when they were killed before their
// cleanup: a directory whose lock no process holds is stale, and opening a
// Manager on it recovers what its environments left (sandbox upper layers,
// cgroups, uid reservations) before it is removed.
//
// The lock is a flock on the directory itself, held for the Manager's life. The
// directory is made under a name the sweep does not match and locked before it
// is renamed to its own: another process's sweep never sees it unlocked.
func OpenLocal(images *image.Store, isolation runner.Isolation) (m *Manager, closeFn func() error, err error) {
	stale, _ := filepath.Glob(filepath.Join(os.TempDir(), localPrefix+"*"))
	for _, d := range stale {
		lock, err := lockDir(d)
		if err != nil {
			continue // alive, or not ours
		}
		if m, err := NewManager(Config{StateDir: d}); err == nil {
			if m.Close() == nil {
				os.RemoveAll(d)
			}
		}
		lock.Close()
	}
	tmp, err := os.MkdirTemp("", "."+localPrefix)
	if err != nil {
		return nil, nil, err
	}
	lock, err := lockDir(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	dir := filepath.Join(filepath.Dir(tmp), strings.TrimPrefix(filepath.Base(tmp), "."))
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		lock.Close()
		return nil, nil, err
	}
	if m, err = NewManager(Config{StateDir: dir, Images: images, Isolation: isolation}); err != nil {
		os.RemoveAll(dir)
		lock.Close()
		return nil, nil, err
	}
	return m, func() error {
		err := m.Close()
		os.RemoveAll(dir)
		lock.Close()
		return err
	}, nil
}

// lockDir opens dir and takes an exclusive flock on it without waiting.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
