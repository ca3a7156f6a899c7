package workspace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// view is one directory of a tree being compared: a plain directory (lower only),
// or an overlay directory, whose upper layer covers the lower one unless it is
// opaque (lower nil) or the lower layer has no directory there.
type view struct {
	upper, lower *layerDir
}

func (v *view) close() {
	if v == nil {
		return
	}
	if v.upper != nil {
		v.upper.close()
	}
	if v.lower != nil {
		v.lower.close()
	}
}

// entry is one name of a view, described by lstat in the layer that provides it.
type entry struct {
	name  string
	st    stat
	dir   *layerDir
	upper bool   // from the overlay's upper layer
	below *entry // for an upper directory, the lower directory it merges with
}

func (e *entry) isDir() bool     { return e.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (e *entry) isLink() bool    { return e.st.Mode&unix.S_IFMT == unix.S_IFLNK }
func (e *entry) isRegular() bool { return e.st.Mode&unix.S_IFMT == unix.S_IFREG }

// upperDirState reads the overlay xattrs of an upper directory: whether it is
// opaque, and refuses redirected directories (never written by userxattr mounts).
func upperDirState(d *layerDir) (opaque bool, err error) {
	if _, ok := overlayXattr(d.fd, "redirect"); ok {
		return false, fmt.Errorf("%w: redirected directory", ErrOverlay)
	}
	v, _ := overlayXattr(d.fd, "opaque")
	return v == "y", nil // "x" only marks a directory holding xattr whiteouts
}

// list returns the entries of a view by name.
func (w *walker) list(v *view) (map[string]*entry, error) {
	m := map[string]*entry{}
	if v == nil {
		return m, nil
	}
	if v.upper != nil {
		names, err := v.upper.names(&w.budget)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			st, err := v.upper.lstat(n)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return nil, err
			}
			m[n] = &entry{name: n, st: st, dir: v.upper, upper: true}
		}
	}
	if v.lower != nil {
		names, err := v.lower.names(&w.budget)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			st, err := v.lower.lstat(n)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return nil, err
			}
			e := &entry{name: n, st: st, dir: v.lower}
			if u, ok := m[n]; ok { // covered by the upper layer
				if u.isDir() && e.isDir() {
					u.below = e
				}
				continue
			}
			m[n] = e
		}
	}
	if v.upper != nil { // whiteouts hide the lower entry and are no entry themselves
		for n, e := range m {
			if !e.upper {
				continue
			}
			wo, err := isWhiteout(e)
			if err != nil && !unreadable(err) { // an unreadable empty file is a file
				return nil, err
			}
			if wo {
				delete(m, n)
			}
		}
	}
	return m, nil
}

// isWhiteout reports whether an upper entry is an overlayfs whiteout: a 0/0
// character device, or an empty regular file with the whiteout xattr.
func isWhiteout(e *entry) (bool, error) {
	switch e.st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		return e.st.Rdev == 0, nil
	case unix.S_IFREG:
		if e.st.Size != 0 {
			return false, nil
		}
		f, err := e.dir.openFile(e.name, &e.st)
		if err != nil {
			return false, err
		}
		defer f.Close()
		_, ok := overlayXattr(int(f.Fd()), "whiteout")
		return ok, nil
	}
	return false, nil
}
