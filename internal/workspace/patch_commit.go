package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"
)

// commit writes a fully applied plan: it removes the files the patch deletes and
// the directories it replaces (emptied by those deletions), writes each new or
// changed file atomically (creating parents), and finally removes the directories
// the deletions left empty.
func (pl *plan) commit() error {
	root := pl.r.root
	var removed []string
	for _, p := range pl.order {
		if v := pl.state[p]; v.onDisk && !v.diskDir && !v.exists {
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &PatchError{Path: p, Err: pathErr("remove", p, err)}
			}
			removed = append(removed, p)
		}
	}
	for _, p := range pl.order {
		if v := pl.state[p]; v.diskDir && !v.isDir {
			if err := pl.removeDirs(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &PatchError{Path: p, Err: pathErr("remove", p, err)}
			}
		}
	}
	for _, p := range pl.order {
		v := pl.state[p]
		if !v.exists || !v.written {
			continue
		}
		if err := pl.write(p, v); err != nil {
			return &PatchError{Path: p, Err: pathErr("write", p, err)}
		}
	}
	for _, p := range removed {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if fi, err := root.Lstat(dir); err != nil || !fi.IsDir() || root.Remove(dir) != nil {
				break // not empty (or not ours to remove)
			}
		}
	}
	return nil
}

func (pl *plan) write(p string, v *vfile) error {
	root := pl.r.root
	if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	if v.symlink {
		target := string(v.data)
		return pl.r.replace(p, replaceOpts{overSymlink: true, symlinkValue: &target}, nil)
	}
	return pl.r.replace(p, replaceOpts{perm: v.perm, overSymlink: true}, func(f *os.File) error {
		_, err := f.Write(v.data)
		return err
	})
}

// removeDirs removes the directory p and the directories below it, all of which
// must be empty of anything else (rmdir fails otherwise): checkReplacedDirs made
// sure the patch deletes every file below p.
func (pl *plan) removeDirs(p string) error {
	f, err := pl.r.root.Open(p)
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, de := range ents {
		if !de.IsDir() {
			return fs.ErrExist
		}
		if err := pl.removeDirs(path.Join(p, de.Name())); err != nil {
			return err
		}
	}
	return pl.r.root.Remove(p)
}
