package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveFlags confine every lookup in a layer directory: no symlink is followed
// (the last component included), no "..", no magic link, no other mount.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openBeneath opens path below dirfd with openat2 and resolveFlags.
func openBeneath(dirfd int, path string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: resolveFlags}
	for range 16 {
		fd, err := unix.Openat2(dirfd, path, how)
		// EAGAIN: a rename elsewhere on the file system raced the lookup.
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// walkError explains why a directory on the way to an entry could not be used.
func walkError(prefix string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: %q is a symbolic link, and nothing is written through one", ErrUnsafe, prefix)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%q is not a directory", prefix)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: %q leaves the layer directory", ErrUnsafe, prefix)
	}
	return fmt.Errorf("open %q: %w", prefix, err)
}

// walk returns an O_PATH descriptor of directory dir (a cleaned path, not "") in
// the layer, creating missing directories (mode 0755, owned by the image's root)
// if create. A component that is a symlink or not a directory is an error.
func (u *unpacker) walk(dir string, create bool) (int, error) {
	fd, err := openBeneath(u.root, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil {
		return fd, nil
	}
	if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return -1, walkError(dir, err)
	}
	// Again component by component, to create what is missing or name the
	// component that is in the way.
	cur, prefix := u.root, ""
	for c := range strings.SplitSeq(dir, "/") {
		prefix = filepath.Join(prefix, c)
		next, err := openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) && create {
			// A directory made for an entry counts as one, or one deep name
			// per entry would make thousands of inodes each.
			if u.info.Entries++; u.info.Entries > u.lim.Entries {
				err = &LimitError{What: "layer has too many entries (directories made for its entries count)", Field: "Entries", Limit: int64(u.lim.Entries)}
			} else if err = unix.Mkdirat(cur, c, 0o755); err == nil {
				err = unix.Fchownat(cur, c, IDBase, IDBase, unix.AT_SYMLINK_NOFOLLOW)
			}
			if err == nil {
				if _, ok := u.dirs[prefix]; !ok {
					u.dirs[prefix] = &dirMeta{mode: 0o755, uid: IDBase, gid: IDBase}
				}
				next, err = openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY)
			}
		}
		if errors.Is(err, unix.ENOTDIR) && isSymlink(cur, c) {
			err = unix.ELOOP
		}
		if cur != u.root {
			unix.Close(cur)
		}
		var le *LimitError
		if errors.As(err, &le) {
			return -1, err
		}
		if err != nil {
			return -1, walkError(prefix, err)
		}
		cur = next
	}
	return cur, nil
}

// parent returns a descriptor of directory dir ("" is the layer root), created if
// missing. It stays owned by the unpacker (the last one is cached: archives list
// a directory's entries together).
func (u *unpacker) parent(dir string) (int, error) {
	if dir == "" {
		return u.root, nil
	}
	if u.cfd >= 0 && u.cdir == dir {
		return u.cfd, nil
	}
	fd, err := u.walk(dir, true)
	if err != nil {
		return -1, err
	}
	u.uncache()
	u.cdir, u.cfd = dir, fd
	return fd, nil
}

func (u *unpacker) uncache() {
	if u.cfd >= 0 {
		unix.Close(u.cfd)
	}
	u.cdir, u.cfd = "", -1
}

// clear makes room for entry name (base in directory pfd): a non-directory there
// is unlinked, a directory removed with its contents unless keepDir, in which case
// isDir reports it is kept. Nothing is followed: the last component is looked at,
// not through.
func (u *unpacker) clear(pfd int, name, base string, keepDir bool) (isDir bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, unix.Unlinkat(pfd, base, 0)
	}
	if keepDir {
		return true, nil
	}
	// The layer directory is private to this import and every component of
	// name was just resolved without a symlink, so the host path reaches it.
	if u.cfd >= 0 && (u.cdir == name || strings.HasPrefix(u.cdir, name+"/")) {
		u.uncache()
	}
	for d := range u.dirs {
		if d == name || strings.HasPrefix(d, name+"/") {
			delete(u.dirs, d)
		}
	}
	return false, os.RemoveAll(filepath.Join(u.path, name))
}

// isSymlink reports whether base in directory dirfd is a symbolic link.
func isSymlink(dirfd int, base string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}
