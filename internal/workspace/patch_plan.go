package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// vfile is one path's state while a patch is planned.
type vfile struct {
	exists  bool
	symlink bool // else a regular file (or a directory, if isDir)
	isDir   bool // an untouched directory from disk: cannot be patched
	data    []byte
	perm    fs.FileMode
	onDisk  bool // something existed at the path before the patch
	diskDir bool // and it was a directory
	written bool // the patch leaves new content or mode at the path
}

type plan struct {
	r           *Root
	state       map[string]*vfile
	order       []string // paths in the order first touched
	traditional bool
	loaded      int64 // bytes held in memory, capped by MaxTotalBytes
}

// apply applies one file change of the patch to the in-memory state.
func (pl *plan) apply(f *gitdiff.File) (PatchedFile, error) {
	oldName, newName := pl.name(f.OldName), pl.name(f.NewName)
	var pf PatchedFile
	switch {
	case f.IsNew:
		pf = PatchedFile{Op: PatchAdd, Path: newName}
	case f.IsDelete:
		pf = PatchedFile{Op: PatchDelete, Path: oldName}
	case f.IsRename:
		pf = PatchedFile{Op: PatchRename, Path: newName, OldPath: oldName}
	case f.IsCopy:
		pf = PatchedFile{Op: PatchCopy, Path: newName, OldPath: oldName}
	default:
		pf = PatchedFile{Op: PatchModify, Path: newName}
	}
	fail := func(err error) (PatchedFile, error) { return PatchedFile{}, &PatchError{Path: pf.Path, Err: err} }
	for _, tf := range f.TextFragments {
		pf.Added += tf.LinesAdded
		pf.Deleted += tf.LinesDeleted
	}

	if pf.Op == PatchModify && oldName != newName {
		return fail(fmt.Errorf("%w: old and new names differ without a rename or copy header", ErrInvalidPath))
	}
	var src *vfile
	if f.IsNew {
		src = &vfile{}
	} else {
		v, err := pl.load(oldName)
		if err != nil {
			return fail(err)
		}
		if !v.exists {
			return fail(fmt.Errorf("%w: does not exist", fs.ErrNotExist))
		}
		if err := checkOldMode(f.OldMode, v); err != nil {
			return fail(err)
		}
		src = v
	}
	out, err := applyContent(f, src.data, pl.r.opts.MaxFileBytes)
	if err != nil {
		var pe *PatchError
		if errors.As(err, &pe) {
			pe.Path = pf.Path
			return PatchedFile{}, pe
		}
		return fail(err)
	}
	if f.IsDelete {
		if len(out) != 0 {
			return fail(errors.New("deleted file keeps content its hunks do not remove"))
		}
		src.exists, src.written = false, false
		return pf, nil
	}

	dst := src
	if f.IsNew || newName != oldName {
		v, err := pl.load(newName)
		if err != nil {
			return fail(err)
		}
		if v.exists && !v.isDir { // a directory may go if the patch empties it
			return fail(fmt.Errorf("%w: already exists", fs.ErrExist))
		}
		if err := pl.parentsFree(newName); err != nil {
			return fail(err)
		}
		dst = v
	}
	symlink, perm := src.symlink, src.perm
	if f.NewMode != 0 && (f.IsNew || f.NewMode != f.OldMode) {
		if symlink, perm, err = gitMode(f.NewMode); err != nil {
			return fail(err)
		}
	}
	if symlink && !linkStaysInside(newName, string(out)) {
		return fail(fmt.Errorf("%w: symlink target %s", ErrEscape, quote(string(out))))
	}
	if err := pl.hold(int64(len(out))); err != nil {
		return fail(err)
	}
	*dst = vfile{exists: true, symlink: symlink, data: out, perm: perm, onDisk: dst.onDisk, diskDir: dst.diskDir, written: true}
	if f.IsRename && newName != oldName {
		src.exists, src.written = false, false
	}
	return pf, nil
}

// name turns a name from the patch into a clean workspace path.
func (pl *plan) name(n string) string {
	if pl.traditional && (strings.HasPrefix(n, "a/") || strings.HasPrefix(n, "b/")) {
		n = n[2:]
	}
	return n
}

// load returns the state of p, reading it from disk the first time: a symlink's
// content is its target, a regular file's its bytes.
func (pl *plan) load(p string) (*vfile, error) {
	if p == "" {
		return nil, fmt.Errorf("%w: missing file name", ErrInvalidPath)
	}
	c, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	if c != p || c == "." {
		return nil, fmt.Errorf("%w: not a clean relative path", ErrInvalidPath)
	}
	if hasDotGit(p) {
		return nil, fmt.Errorf("%w: refusing to patch inside .git", ErrInvalidPath)
	}
	if v, ok := pl.state[p]; ok {
		return v, nil
	}
	v := &vfile{}
	if onDisk, err := pl.parentsOnDisk(p); err != nil || !onDisk {
		pl.remember(p, v)
		return v, err
	}
	d, err := pl.r.root.OpenRoot(path.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		pl.remember(p, v)
		return v, nil
	}
	if err != nil {
		return nil, pathErr("patch", p, err)
	}
	defer d.Close()
	name := path.Base(p)
	fi, err := d.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, pathErr("patch", p, err)
	case fi.IsDir():
		*v = vfile{exists: true, isDir: true, onDisk: true, diskDir: true}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := d.Readlink(name)
		if err != nil {
			return nil, pathErr("patch", p, err)
		}
		*v = vfile{exists: true, symlink: true, data: []byte(target), onDisk: true}
	default:
		data, fi, err := pl.r.loadEntry(d, name, p)
		if err != nil {
			return nil, pathErr("patch", p, err)
		}
		if err := pl.hold(int64(len(data))); err != nil {
			return nil, err
		}
		*v = vfile{exists: true, data: data, perm: fi.Mode().Perm(), onDisk: true}
	}
	pl.remember(p, v)
	return v, nil
}

func (pl *plan) remember(p string, v *vfile) {
	pl.state[p] = v
	pl.order = append(pl.order, p)
}

func (pl *plan) hold(n int64) error {
	if pl.loaded += n; pl.loaded > pl.r.opts.MaxTotalBytes {
		return &LimitError{What: "patch working set", Limit: pl.r.opts.MaxTotalBytes}
	}
	return nil
}

// parentsOnDisk reports whether p's parents on disk still decide what is at p:
// not if the patch has already put a file, a symlink or nothing at one of them. It
// refuses a path below a symlink on disk, as git apply does ("beyond a symbolic
// link").
func (pl *plan) parentsOnDisk(p string) (bool, error) {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if v, ok := pl.state[dir]; ok {
			if !v.diskDir {
				return false, nil
			}
			continue
		}
		switch fi, err := pl.r.root.Lstat(dir); {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return false, fmt.Errorf("%w: parent %s is a symlink", ErrSymlink, quote(dir))
		case err == nil && !fi.IsDir(), errors.Is(err, fs.ErrNotExist):
			return false, nil // nothing can be below it
		}
	}
	return true, nil
}

// parentsFree checks that every parent of a path to be created is, or can become, a
// directory: none is a file that the patch keeps.
func (pl *plan) parentsFree(p string) error {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		v, ok := pl.state[dir]
		if !ok {
			fi, err := pl.r.root.Lstat(dir)
			if err != nil || fi.IsDir() {
				continue
			}
			return fmt.Errorf("%w: parent %s is not a directory", fs.ErrExist, quote(dir))
		}
		if v.exists && !v.isDir {
			return fmt.Errorf("%w: parent %s is not a directory", fs.ErrExist, quote(dir))
		}
	}
	return nil
}

// checkReplacedDirs verifies, once every change is planned, that each directory the
// patch replaces (by a file or symlink, possibly deleted again later in the patch)
// loses all its files to the same patch, so that the write phase can remove it.
func (pl *plan) checkReplacedDirs() error {
	for _, p := range pl.order {
		if v := pl.state[p]; v.diskDir && !v.isDir {
			seen := 0
			if err := pl.emptied(p, &seen); err != nil {
				return &PatchError{Path: p, Err: err}
			}
		}
	}
	return nil
}

func (pl *plan) emptied(dir string, seen *int) error {
	f, err := pl.r.root.Open(dir)
	if err != nil {
		return pathErr("patch", dir, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return pathErr("patch", dir, err)
	}
	for _, de := range ents {
		if *seen++; *seen > pl.r.opts.MaxEntries {
			return &LimitError{What: "entries under a replaced directory", Limit: int64(pl.r.opts.MaxEntries)}
		}
		p := path.Join(dir, de.Name())
		if de.IsDir() {
			if err := pl.emptied(p, seen); err != nil {
				return err
			}
			continue
		}
		if v, ok := pl.state[p]; !ok || v.exists {
			return fmt.Errorf("%w: directory is replaced but %s is kept", fs.ErrExist, quote(p))
		}
	}
	return nil
}
