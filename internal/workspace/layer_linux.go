package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// layerDir is an open directory of one tree (a layer of the overlay, or a plain
// directory), reached from the tree's root one component at a time.
type layerDir struct {
	f  *os.File // owns fd, for Readdirnames
	fd int
}

// openLayerRoot opens the root of a tree. The path is the caller's (trusted).
func openLayerRoot(p string) (*layerDir, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, fmt.Errorf("open tree root: %w", err)
	}
	return &layerDir{f: os.NewFile(uintptr(fd), "."), fd: fd}, nil
}

func (d *layerDir) close() { d.f.Close() }

// names lists the entry names of d, stopping with a *LimitError once budget runs
// out.
func (d *layerDir) names(budget *int) ([]string, error) {
	var all []string
	for {
		ns, err := d.f.Readdirnames(1024)
		all = append(all, ns...)
		if *budget -= len(ns); *budget < 0 {
			return nil, errEntries
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ns) == 0) {
			return all, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

var errEntries = errors.New("directory entries") // turned into a LimitError by the walker

// stat is what a walk keeps of an entry's lstat: enough to know the entry again
// (device, inode, type) and to judge it (mode, size, device number), and small, for
// directories of a million entries.
type stat struct {
	Mode           uint32
	Size           int64
	Dev, Ino, Rdev uint64
}

// lstat describes the entry name of d without following it.
func (d *layerDir) lstat(name string) (stat, error) {
	var st unix.Stat_t
	if err := checkName(name); err != nil {
		return stat{}, err
	}
	_, err := retryEINTR(func() (int, error) { return 0, unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return stat{Mode: st.Mode, Size: st.Size, Dev: st.Dev, Ino: st.Ino, Rdev: st.Rdev}, err
}

// open opens the entry name of d with openat2: one component, no symlink anywhere
// (RESOLVE_NO_SYMLINKS), never above d (RESOLVE_BENEATH), no other mount
// (RESOLVE_NO_XDEV). What it opened must be the entry st described (same device,
// inode and type), or it fails with ErrChanged: a swap between lstat and open is
// noticed rather than followed.
func (d *layerDir) open(name string, flags int, st *stat) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	fd, err := retryEINTR(func() (int, error) { return unix.Openat2(d.fd, name, &how) })
	if err != nil {
		return -1, err
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if got.Dev != st.Dev || got.Ino != st.Ino || got.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		unix.Close(fd)
		return -1, ErrChanged
	}
	return fd, nil
}

// openDir opens the subdirectory name of d that st describes.
func (d *layerDir) openDir(name string, st *stat) (*layerDir, error) {
	fd, err := d.open(name, unix.O_RDONLY|unix.O_DIRECTORY, st)
	if err != nil {
		return nil, err
	}
	return &layerDir{f: os.NewFile(uintptr(fd), name), fd: fd}, nil
}

// openFile opens the regular file name of d that st describes. O_NONBLOCK keeps a
// fifo swapped in from blocking the open; the identity check then refuses it.
func (d *layerDir) openFile(name string, st *stat) (*os.File, error) {
	fd, err := d.open(name, unix.O_RDONLY|unix.O_NONBLOCK, st)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readlink returns the target of the symlink name of d as text.
func (d *layerDir) readlink(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	buf := make([]byte, unix.PathMax+1)
	n, err := retryEINTR(func() (int, error) { return unix.Readlinkat(d.fd, name, buf) })
	if err != nil {
		return "", err
	}
	if n > unix.PathMax {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// checkName refuses what getdents never returns but a corrupted listing might.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: bad entry name %q", ErrInvalidPath, name)
	}
	return nil
}

// overlayXattr reads the overlayfs xattr key ("opaque", "whiteout", ...) of the open
// file fd, under the user. prefix (userxattr mounts) or the trusted. prefix. An
// ERANGE (a value longer than any overlayfs writes) still counts as present.
func overlayXattr(fd int, key string) (value string, ok bool) {
	for _, prefix := range []string{"user.overlay.", "trusted.overlay."} {
		var buf [256]byte
		n, err := unix.Fgetxattr(fd, prefix+key, buf[:])
		switch {
		case err == nil:
			return string(buf[:n]), true
		case errors.Is(err, unix.ERANGE):
			return "", true
		}
	}
	return "", false
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}
