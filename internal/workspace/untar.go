package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// UntarFrom extracts the tar stream rd into the directory rel (created if missing).
// It accepts directories, regular files and symlinks; it rejects, before writing
// anything for that entry, names that are absolute or hold a ".." component
// (ErrEscape), symlinks whose target is absolute or leaves the workspace (ErrEscape),
// and hardlinks, devices and fifos (ErrNotRegular). Files are written atomically
// with the archive's permission bits (never setuid, setgid or sticky) and may replace
// existing files and symlinks; writes never follow a symlink at the final name,
// and os.Root refuses parents that resolve outside the workspace. Entry count,
// file size and total size are capped by Options. Extraction stops at the first bad
// entry; entries before it stay extracted.
func (r *Root) UntarFrom(rd io.Reader, rel string) error {
	dest, err := cleanAny("untar", rel)
	if err != nil {
		return err
	}
	if err := r.root.MkdirAll(dest, 0o755); err != nil {
		return pathErr("untar", dest, err)
	}
	tr := tar.NewReader(rd)
	var entries int
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("untar: %w", err)
		}
		if entries++; entries > r.opts.MaxEntries {
			return &LimitError{What: "archive entries", Limit: int64(r.opts.MaxEntries)}
		}
		name, err := tarName(h.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue // "./", the destination itself
		}
		p := path.Join(dest, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = r.root.MkdirAll(p, fs.FileMode(h.Mode).Perm()|0o700)
		case tar.TypeReg:
			if h.Size > r.opts.MaxFileBytes {
				return &TooLargeError{Path: p, Size: h.Size, Limit: r.opts.MaxFileBytes}
			}
			if total += h.Size; total > r.opts.MaxTotalBytes {
				return &LimitError{What: "archive size", Limit: r.opts.MaxTotalBytes}
			}
			err = r.untarFile(p, fs.FileMode(h.Mode), io.LimitReader(tr, h.Size))
		case tar.TypeSymlink:
			if !linkStaysInside(p, h.Linkname) {
				return &fs.PathError{Op: "untar", Path: p, Err: fmt.Errorf("%w: symlink target %s", ErrEscape, quote(h.Linkname))}
			}
			if err = r.root.MkdirAll(path.Dir(p), 0o755); err == nil {
				err = r.replace(p, replaceOpts{overSymlink: true, symlinkValue: &h.Linkname}, nil)
			}
		case tar.TypeXGlobalHeader:
			continue
		default:
			return &fs.PathError{Op: "untar", Path: p, Err: fmt.Errorf("%w: tar entry type %q", ErrNotRegular, h.Typeflag)}
		}
		if err != nil {
			return pathErr("untar", p, err)
		}
	}
}

func (r *Root) untarFile(p string, mode fs.FileMode, src io.Reader) error {
	if err := r.root.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	return r.replace(p, replaceOpts{perm: mode.Perm(), overSymlink: true}, func(f *os.File) error {
		_, err := io.Copy(f, src)
		return err
	})
}

// tarName cleans an archive entry name, refusing absolute names and any ".."
// component even when it would stay inside.
func tarName(n string) (string, error) {
	for c := range strings.SplitSeq(n, "/") {
		if c == ".." {
			return "", &fs.PathError{Op: "untar", Path: n, Err: ErrEscape}
		}
	}
	c, err := CleanPath(n)
	if err != nil {
		return "", &fs.PathError{Op: "untar", Path: n, Err: err}
	}
	return c, nil
}
