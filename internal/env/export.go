package env

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/agentbox/agentbox/internal/workspace"
)

// Export stores a workspace file in the artifact store and returns its reference,
// owned by owner: only owner's tenant can read it back. Past the tenant's
// artifact quota it is a *QuotaError, and nothing is stored.
func (m *Manager) Export(ctx context.Context, owner Owner, id, p string) (Artifact, error) {
	var f *os.File
	var size int64
	err := m.withRoot(owner, id, func(r *workspace.Root) error {
		var err error
		var fi os.FileInfo
		f, fi, err = r.Open(p)
		if err == nil {
			size = fi.Size()
		}
		return err
	})
	if err != nil {
		return Artifact{}, err
	}
	defer f.Close()
	name := path.Clean(p)
	if size > m.cfg.MaxArtifactBytes {
		return Artifact{}, &workspace.TooLargeError{Path: name, Size: size, Limit: m.cfg.MaxArtifactBytes}
	}
	// Copied as agentbox (the store is agentbox's), from the file opened as the
	// sandbox user. A read error would name the file's host path: say less.
	a, err := m.store.put(readerOnly{f}, size, Artifact{Owner: owner, Name: path.Base(name), EnvID: id, Source: "file:" + name})
	if err != nil {
		return Artifact{}, fmt.Errorf("export %s: %w", name, err)
	}
	return a, nil
}

// readerOnly hides the *os.File (and its WriterTo fast path) so that io.Copy only
// reads, and strips the host path from its errors.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	return n, stripPath(err)
}

// stripPath turns an *os.PathError into its bare errno, which names no path.
func stripPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// ReadArtifact returns length bytes of an artifact from offset (length 0: to the
// end) and its description. Only the owner's tenant can read it: for anyone else
// it is ErrNotFound, exactly like a reference that does not exist. More than
// Config.MaxReadBytes is a *workspace.TooLargeError.
func (m *Manager) ReadArtifact(ctx context.Context, owner Owner, ref string, offset, length int64) ([]byte, Artifact, error) {
	if owner.Tenant == "" {
		return nil, Artifact{}, fmt.Errorf("artifact %s: %w", ref, ErrNotFound)
	}
	if offset < 0 || length < 0 {
		return nil, Artifact{}, fmt.Errorf("%w: negative offset or length", ErrInvalid)
	}
	a, f, err := m.store.open(owner.Tenant, ref)
	if err != nil {
		return nil, Artifact{}, err
	}
	defer f.Close()
	n := max(a.Size-offset, 0)
	if length > 0 {
		n = min(n, length)
	}
	if n > m.cfg.MaxReadBytes {
		return nil, Artifact{}, &workspace.TooLargeError{Path: ref, Size: a.Size, Limit: m.cfg.MaxReadBytes}
	}
	buf := make([]byte, n)
	k, err := f.ReadAt(buf, offset)
	if err != nil && err != io.EOF {
		return nil, Artifact{}, fmt.Errorf("read artifact %s: %w", ref, stripPath(err))
	}
	return buf[:k], a, nil
}
