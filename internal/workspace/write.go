package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
)

// WriteFile replaces the file rel with data atomically: it writes a temporary file in
// the same directory and renames it over rel, so readers see the old or the new
// content, and a hardlink at rel never carries the write to another name. A new
// file gets perm (0644 if zero; only permission bits are kept); an existing file
// keeps its permissions. rel's directory must exist. If rel is a symlink it fails
// with ErrSymlink rather than write through or replace the link.
func (r *Root) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	p, err := cleanEntry("write", rel)
	if err != nil {
		return err
	}
	if int64(len(data)) > r.opts.MaxFileBytes {
		return &TooLargeError{Path: p, Size: int64(len(data)), Limit: r.opts.MaxFileBytes}
	}
	err = r.replace(p, replaceOpts{perm: perm, keepPerm: true}, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	return pathErr("write", p, err)
}

// Mkdir creates the directory rel and any missing parents, like mkdir -p.
func (r *Root) Mkdir(rel string) error {
	p, err := cleanEntry("mkdir", rel)
	if err != nil {
		return err
	}
	return pathErr("mkdir", p, r.root.MkdirAll(p, 0o755))
}

type replaceOpts struct {
	perm         fs.FileMode // for a new file; 0 means 0644
	keepPerm     bool        // an existing regular file keeps its permissions
	overSymlink  bool        // a symlink at the path is replaced, not refused
	symlinkValue *string     // create a symlink with this target instead of a file
}

// replace puts a new file (or symlink) at the clean path p by creating it under a
// temporary name in p's directory and renaming it over p. The directory is opened
// once as its own root, so the create and the rename happen in the same directory
// even if a parent is swapped meanwhile; the rename replaces the entry p names and
// never follows a link there.
func (r *Root) replace(p string, o replaceOpts, fill func(*os.File) error) error {
	d, err := r.root.OpenRoot(path.Dir(p))
	if err != nil {
		return err
	}
	defer d.Close()
	name := path.Base(p)
	mode := o.perm.Perm()
	if mode == 0 {
		mode = 0o644
	}
	switch fi, err := d.Lstat(name); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		if !o.overSymlink {
			return ErrSymlink
		}
	case !fi.Mode().IsRegular():
		return ErrNotRegular
	case o.keepPerm:
		mode = fi.Mode().Perm()
	}
	tmp := tempName()
	if o.symlinkValue != nil {
		if err := d.Symlink(*o.symlinkValue, tmp); err != nil {
			return err
		}
	} else if err := writeTemp(d, tmp, mode, fill); err != nil {
		return err
	}
	if err := d.Rename(tmp, name); err != nil {
		d.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp creates the new file tmp in d, fills it and sets its mode through the
// descriptor (not affected by the umask, and not by a swap of the name).
func writeTemp(d *os.Root, tmp string, mode fs.FileMode, fill func(*os.File) error) error {
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		d.Remove(tmp)
	}
	return err
}

// tempName is a fresh name for a file that replace renames into place; it is short
// enough to fit beside any name.
func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return ".agentbox-tmp-" + hex.EncodeToString(b[:])
}
