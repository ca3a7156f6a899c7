package workspace

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Entry describes one directory entry without following it.
type Entry struct {
	Path       string      // clean, relative to the workspace root
	Name       string      // last element of Path
	Mode       fs.FileMode // type and permission bits
	Size       int64
	ModTime    time.Time
	Links      uint64 // hard links
	LinkTarget string // for a symlink, its target as text (Stat only)
}

func newEntry(p string, fi fs.FileInfo) Entry {
	return Entry{
		Path:    p,
		Name:    path.Base(p),
		Mode:    fi.Mode(),
		Size:    fi.Size(),
		ModTime: fi.ModTime(),
		Links:   linkCount(fi),
	}
}

// Stat describes the entry rel itself (lstat: a symlink is described, with its
// target, not followed). Parent directories that are symlinks inside the workspace
// are followed.
func (r *Root) Stat(rel string) (Entry, error) {
	p, err := cleanAny("stat", rel)
	if err != nil {
		return Entry{}, err
	}
	fi, err := r.root.Lstat(p)
	if err != nil {
		return Entry{}, pathErr("stat", p, err)
	}
	e := newEntry(p, fi)
	if fi.Mode()&fs.ModeSymlink != 0 {
		if e.LinkTarget, err = r.root.Readlink(p); err != nil {
			return Entry{}, pathErr("stat", p, err)
		}
	}
	return e, nil
}

// List returns the entries of the directory rel sorted by name, each described
// without being followed. rel itself may be a symlink to a directory inside the
// workspace. More than Options.MaxEntries entries is a *LimitError.
func (r *Root) List(rel string) ([]Entry, error) {
	p, err := cleanAny("list", rel)
	if err != nil {
		return nil, err
	}
	f, err := r.root.OpenFile(p, syscall.O_RDONLY|syscall.O_DIRECTORY|nonblock, 0)
	if err != nil {
		return nil, pathErr("list", p, err)
	}
	defer f.Close()
	var out []Entry
	for {
		// In a Root, ReadDir describes entries with fstatat on the directory's
		// descriptor, not by path.
		ents, err := f.ReadDir(256)
		for _, de := range ents {
			fi, ierr := de.Info()
			if errors.Is(ierr, fs.ErrNotExist) {
				continue // removed since it was listed
			}
			if ierr != nil {
				return nil, pathErr("list", p, ierr)
			}
			out = append(out, newEntry(path.Join(p, de.Name()), fi))
		}
		if len(out) > r.opts.MaxEntries {
			return nil, &LimitError{What: "directory entries", Limit: int64(r.opts.MaxEntries)}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			return nil, pathErr("list", p, err)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
