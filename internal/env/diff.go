package env

import (
	"context"

	"github.com/agentbox/agentbox/internal/workspace"
)

// Diff renders every change made in the environment since it was created (the
// private upper layer against its lower layer) as a git diff: added, modified and
// deleted files, symlinks as their targets, binary files marked as such, .git
// directories left out. It degrades rather than fails on what the sandbox made (see
// workspace.DiffOptions): past Config.MaxDiffBytes it ends after the last whole file
// with a marker line, and what it cannot carry is named on a marker line.
//
// The upper layer is read directly on the host (never through a symlink; see
// workspace.Diff) while the environment's cgroup is frozen and no API file
// operation runs, so it is at rest: neither the sandbox nor agentbox writes it
// meanwhile. Commands are paused, not stopped, for as long as the diff takes.
func (m *Manager) Diff(ctx context.Context, owner Owner, id string) ([]byte, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return nil, err
	}
	defer done()
	e.files.Lock()
	defer e.files.Unlock()
	var out []byte
	var diffErr error
	err = e.sb.Frozen(func() error {
		out, _, diffErr = workspace.Diff(e.lower, e.sb.UpperDir(), workspace.DiffOptions{MaxTotalBytes: m.cfg.MaxDiffBytes})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, diffErr
}
