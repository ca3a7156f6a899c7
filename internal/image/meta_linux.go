package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// dirMeta is what is applied to a directory once everything in it is written,
// so that a read-only directory or an mtime does not change under its entries.
type dirMeta struct {
	mode     uint32
	uid, gid int
	atime    time.Time
	mtime    time.Time
	xattrs   map[string]string
	opaque   bool
}

// meta is the dirMeta of directory entry h; an earlier one's opaque mark stays.
func (u *unpacker) meta(name string, h *tar.Header, old *dirMeta) *dirMeta {
	uid, gid := u.owner(name, h)
	return &dirMeta{
		mode:   u.perm(name, h, true),
		uid:    uid,
		gid:    gid,
		atime:  h.AccessTime,
		mtime:  h.ModTime,
		xattrs: xattrs(h),
		opaque: old != nil && old.opaque,
	}
}

// finishDirs applies the recorded metadata of every directory still there,
// deepest first. A directory a later entry replaced is skipped.
func (u *unpacker) finishDirs() error {
	names := make([]string, 0, len(u.dirs))
	for n := range u.dirs {
		names = append(names, n)
	}
	depth := func(n string) int {
		if n == "" {
			return -1
		}
		return strings.Count(n, "/")
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := depth(names[i]), depth(names[j])
		return di > dj || di == dj && names[i] < names[j]
	})
	for _, n := range names {
		m := u.dirs[n]
		p := n
		if p == "" {
			p = "."
		}
		fd, err := openBeneath(u.root, p, unix.O_RDONLY|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			continue
		}
		if err != nil {
			return fmt.Errorf("directory %q: %w", n, err)
		}
		err = u.applyDir(n, fd, m)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("directory %q: %w", n, err)
		}
	}
	return nil
}

func (u *unpacker) applyDir(name string, fd int, m *dirMeta) error {
	if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, m.mode); err != nil {
		return err
	}
	if err := u.setXattrs(name, fd, m.xattrs); err != nil {
		return err
	}
	if m.opaque {
		if err := unix.Fsetxattr(fd, xattrOpaque, []byte("y"), 0); err != nil {
			return fmt.Errorf("mark opaque for overlayfs (the store's file system must support user xattrs): %w", err)
		}
	}
	return setTimes(fd, "", m.atime, m.mtime)
}

// xattrs returns the extended attributes an archive entry carries (PAX
// SCHILY.xattr records).
func xattrs(h *tar.Header) map[string]string {
	var out map[string]string
	for k, v := range h.PAXRecords {
		if x, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[x] = v
		}
	}
	return out
}

// setXattrs sets those of xs that keepXattr allows on fd, and records the rest.
// A file system that refuses one (no user xattrs, value too large) is recorded,
// not fatal.
func (u *unpacker) setXattrs(name string, fd int, xs map[string]string) error {
	keys := make([]string, 0, len(xs))
	for k := range xs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !keepXattr(k) {
			u.info.adjust(name, AdjXattr, k+": namespace not kept")
			continue
		}
		err := unix.Fsetxattr(fd, k, []byte(xs[k]), 0)
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.E2BIG), errors.Is(err, unix.ERANGE), errors.Is(err, unix.ENOSPC):
			u.info.adjust(name, AdjXattr, k+": "+err.Error())
		default:
			return fmt.Errorf("set xattr %s: %w", k, err)
		}
	}
	return nil
}

// setTimes sets the times of base in directory dirfd (or of dirfd itself if base
// is ""), not following a symlink. A zero mtime leaves the times alone.
func setTimes(dirfd int, base string, atime, mtime time.Time) error {
	if mtime.IsZero() {
		return nil
	}
	if atime.IsZero() {
		atime = mtime
	}
	ts := []unix.Timespec{
		{Sec: atime.Unix(), Nsec: int64(atime.Nanosecond())},
		{Sec: mtime.Unix(), Nsec: int64(mtime.Nanosecond())},
	}
	flags := unix.AT_SYMLINK_NOFOLLOW
	if base == "" {
		flags = unix.AT_EMPTY_PATH
	}
	return unix.UtimesNanoAt(dirfd, base, ts, flags)
}
