package env

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"

	"github.com/agentbox/agentbox/internal/workspace"
)

// Every file operation goes through the environment's workspace.Root, opened on
// the O_PATH descriptor of /workspace its init sent (the overlay exactly as the
// sandbox sees it; the upper layer is never written behind the overlay's back),
// on a thread whose file system identity is the sandbox user's (see asUser).
// Paths are relative to /workspace; the errors are workspace's, which name
// workspace-relative paths only.

// withRoot runs fn on the environment's root as the sandbox user, holding the
// file lock shared.
func (m *Manager) withRoot(owner Owner, id string, fn func(r *workspace.Root) error) error {
	e, done, err := m.use(owner, id)
	if err != nil {
		return err
	}
	defer done()
	e.files.RLock()
	defer e.files.RUnlock()
	return asUser(e.uid, e.uid, func() error { return fn(e.root) })
}

// ReadFile returns length bytes of a file from offset (length 0: to the end). More
// than Config.MaxReadBytes is a *workspace.TooLargeError with the file's size.
func (m *Manager) ReadFile(ctx context.Context, owner Owner, id, p string, offset, length int64) ([]byte, error) {
	var out []byte
	err := m.withRoot(owner, id, func(r *workspace.Root) error {
		var err error
		out, err = r.ReadFile(p, offset, length)
		return err
	})
	return out, err
}

// WriteFile replaces a file atomically (a temporary file renamed over it),
// creating missing parent directories. A new file is 0644, an existing one keeps
// its mode; a symlink at p is refused (workspace.ErrSymlink).
func (m *Manager) WriteFile(ctx context.Context, owner Owner, id, p string, data []byte) error {
	return m.withRoot(owner, id, func(r *workspace.Root) error {
		if dir := path.Dir(path.Clean(p)); dir != "." && dir != "/" {
			if err := r.Mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		return r.WriteFile(p, data, 0o644)
	})
}

// ListDir lists a directory (entries are not followed).
func (m *Manager) ListDir(ctx context.Context, owner Owner, id, p string) ([]workspace.Entry, error) {
	var out []workspace.Entry
	err := m.withRoot(owner, id, func(r *workspace.Root) error {
		var err error
		out, err = r.List(p)
		return err
	})
	return out, err
}

// Stat describes an entry without following it.
func (m *Manager) Stat(ctx context.Context, owner Owner, id, p string) (workspace.Entry, error) {
	var out workspace.Entry
	err := m.withRoot(owner, id, func(r *workspace.Root) error {
		var err error
		out, err = r.Stat(p)
		return err
	})
	return out, err
}

// Remove removes a file, a symlink (not its target) or a directory with
// everything in it. A missing path is fs.ErrNotExist.
func (m *Manager) Remove(ctx context.Context, owner Owner, id, p string) error {
	return m.withRoot(owner, id, func(r *workspace.Root) error {
		if _, err := r.Stat(p); err != nil {
			return err
		}
		return r.RemoveAll(p)
	})
}

// Mkdir creates a directory and its missing parents.
func (m *Manager) Mkdir(ctx context.Context, owner Owner, id, p string) error {
	return m.withRoot(owner, id, func(r *workspace.Root) error { return r.Mkdir(p) })
}

// Download writes the file or directory tree at p to w as a tar stream.
func (m *Manager) Download(ctx context.Context, owner Owner, id, p string, w io.Writer) error {
	return m.withRoot(owner, id, func(r *workspace.Root) error { return r.TarTo(w, p) })
}

// Upload extracts a tar stream into the directory p (created if missing). See
// workspace.Root.UntarFrom for what it refuses.
func (m *Manager) Upload(ctx context.Context, owner Owner, id, p string, rd io.Reader) error {
	return m.withRoot(owner, id, func(r *workspace.Root) error { return r.UntarFrom(rd, p) })
}

// ApplyPatch applies a unified or git diff, all hunks or none; a hunk that does
// not apply is a *workspace.PatchError naming it.
func (m *Manager) ApplyPatch(ctx context.Context, owner Owner, id string, patch []byte) (workspace.PatchReport, error) {
	var rep workspace.PatchReport
	err := m.withRoot(owner, id, func(r *workspace.Root) error {
		var err error
		rep, err = r.ApplyPatch(patch)
		return err
	})
	return rep, err
}

// StrReplace replaces the one occurrence of old in a file by new; none is
// workspace.ErrNoMatch, several a *workspace.AmbiguousError with the count.
func (m *Manager) StrReplace(ctx context.Context, owner Owner, id, p, old, new string) error {
	return m.withRoot(owner, id, func(r *workspace.Root) error { return r.StrReplace(p, old, new) })
}
