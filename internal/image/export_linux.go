package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// exportUpper writes the overlayfs upper directory of a build step as an OCI
// layer archive: whiteouts (0/0 character devices) as ".wh." entries, opaque
// directories (user.overlay.opaque=y) with a ".wh..wh..opq" entry, owners mapped
// back from the foreign range (anything else is nobody's), hard links as links,
// user.* xattrs but no user.overlay.* ones. The directory was written by build
// commands: it is walked by descriptor, never through a symlink. The archive
// then goes through the unpacker like any other.
func exportUpper(ctx context.Context, dir string, w io.Writer) error {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	e := &exporter{ctx: ctx, tw: tar.NewWriter(w), links: map[[2]uint64]string{}}
	if err := e.dir(root, ""); err != nil {
		return err
	}
	return e.tw.Close()
}

type exporter struct {
	ctx   context.Context
	tw    *tar.Writer
	links map[[2]uint64]string // (dev, ino) of a file with several names -> its first name
}

// dir writes the entries of the directory fd (at name, "" for the root), and
// closes fd.
func (e *exporter) dir(fd int, name string) error {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %q: %w", name, err)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if err := e.entry(fd, name, n); err != nil {
			return err
		}
	}
	return nil
}

func (e *exporter) entry(dirfd int, dir, base string) error {
	name := base
	if dir != "" {
		name = dir + "/" + base
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	h := &tar.Header{
		Name:    name,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     imageID(st.Uid),
		Gid:     imageID(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()),
		Format:  tar.FormatPAX,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if st.Rdev == 0 {
			return e.write(&tar.Header{Name: joinName(dir, whiteoutPrefix+base), Typeflag: tar.TypeReg, Mode: 0o644, ModTime: h.ModTime, Format: tar.FormatPAX}, nil)
		}
		h.Typeflag, h.Devmajor, h.Devminor = tar.TypeChar, int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
		return e.write(h, nil)
	case unix.S_IFBLK:
		h.Typeflag, h.Devmajor, h.Devminor = tar.TypeBlock, int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
		return e.write(h, nil)
	case unix.S_IFIFO:
		h.Typeflag = tar.TypeFifo
		return e.write(h, nil)
	case unix.S_IFSOCK:
		return nil // a socket is not content
	case unix.S_IFLNK:
		buf := make([]byte, maxPath+1)
		n, err := unix.Readlinkat(dirfd, base, buf)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, string(buf[:n])
		return e.write(h, nil)
	case unix.S_IFDIR:
		fd, err := openBeneath(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		opaque, err := e.xattrs(fd, h)
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		if err == nil {
			err = e.write(h, nil)
		}
		if err == nil && opaque {
			err = e.write(&tar.Header{Name: name + "/" + whiteoutOpaque, Typeflag: tar.TypeReg, Mode: 0o644, ModTime: h.ModTime, Format: tar.FormatPAX}, nil)
		}
		if err != nil {
			unix.Close(fd)
			return err
		}
		return e.dir(fd, name)
	case unix.S_IFREG:
		key := [2]uint64{st.Dev, st.Ino}
		if first, ok := e.links[key]; ok {
			h.Typeflag, h.Linkname = tar.TypeLink, first
			return e.write(h, nil)
		}
		if st.Nlink > 1 {
			e.links[key] = name
		}
		fd, err := openBeneath(dirfd, base, unix.O_RDONLY)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		if _, err := e.xattrs(fd, h); err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, st.Size
		return e.write(h, f)
	}
	return fmt.Errorf("%q: unknown file type %o", name, st.Mode)
}

// xattrs adds the user.* xattrs of fd to h and reports whether it is marked opaque.
func (e *exporter) xattrs(fd int, h *tar.Header) (opaque bool, err error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Flistxattr(fd, buf)
	if errors.Is(err, unix.ENOTSUP) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	val := make([]byte, 64<<10)
	for x := range strings.SplitSeq(string(buf[:n]), "\x00") {
		if x == "" || !strings.HasPrefix(x, "user.") {
			continue
		}
		m, err := unix.Fgetxattr(fd, x, val)
		if err != nil {
			return false, err
		}
		if x == xattrOpaque {
			opaque = string(val[:m]) == "y"
			continue
		}
		if keepXattr(x) {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+x] = string(val[:m])
		}
	}
	return opaque, nil
}

func (e *exporter) write(h *tar.Header, body io.Reader) error {
	if err := e.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%q: %w", h.Name, err)
	}
	if body != nil {
		n, err := io.Copy(e.tw, body)
		if err == nil && n != h.Size {
			err = fmt.Errorf("%q changed size while it was read", h.Name)
		}
		return err
	}
	return nil
}

func joinName(dir, base string) string {
	if dir == "" {
		return base
	}
	return dir + "/" + base
}
