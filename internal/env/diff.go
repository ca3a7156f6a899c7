package env

import (
	"context"
	"strconv"

	"github.com/agentbox/agentbox/internal/workspace"
)

// Diff renders every change made in the environment since it was created (the
// private upper layer against its lower layer; on a snapshot, or a fork, the
// whole workspace against it, which reads every file) as a git diff: added, modified and
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
	sb := e.sandbox()
	opts := workspace.DiffOptions{MaxTotalBytes: m.cfg.MaxDiffBytes}
	err = sb.Frozen(func() error {
		if e.top == nil {
			out, _, diffErr = workspace.Diff(e.lower, sb.UpperDir(), opts)
			return nil
		}
		// On a snapshot the changes are in several layers: the merged
		// workspace against the lower layer, file by file.
		ws := "/proc/self/fd/" + strconv.Itoa(int(sb.WorkspaceDir().Fd()))
		out, _, diffErr = workspace.DiffTrees(e.lower, ws, opts)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, diffErr
}
