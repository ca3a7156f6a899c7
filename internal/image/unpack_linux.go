package image

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// unpacker writes one layer archive into a fresh directory. The archive is
// hostile; the directory is private to this import (no one else writes it while
// it is unpacked), so what it must stop is the archive's own entries reaching
// outside: every directory is opened with openat2 and resolveFlags, every final
// component is created with O_EXCL/O_NOFOLLOW or its *at equivalent after
// removing what was there, never written through.
type unpacker struct {
	lim  Limits
	path string // host path of the layer directory (for RemoveAll)
	root int    // O_PATH descriptor of the layer directory
	info LayerInfo
	dirs map[string]*dirMeta
	buf  []byte
	// cdir/cfd: the last parent directory opened.
	cdir string
	cfd  int
}

// unpack writes the layer archive r into dir, which must not exist, and returns
// what it found; DiffID is the digest of every byte of r. On error dir is left
// for the caller to remove.
func unpack(ctx context.Context, r io.Reader, dir string, lim Limits) (LayerInfo, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return LayerInfo{}, err
	}
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return LayerInfo{}, err
	}
	u := &unpacker{
		lim:  lim.withDefaults(),
		path: dir,
		root: root,
		dirs: map[string]*dirMeta{"": {mode: 0o755, uid: IDBase, gid: IDBase}},
		buf:  make([]byte, sparseChunk),
		cfd:  -1,
	}
	defer func() {
		u.uncache()
		unix.Close(u.root)
	}()
	h := sha256.New()
	cr := &countReader{r: ctxReader{ctx, r}}
	stream := io.TeeReader(cr, h)
	tr := tar.NewReader(stream)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return LayerInfo{}, fmt.Errorf("read layer archive: %w", err)
		}
		if u.info.Entries++; u.info.Entries > u.lim.Entries {
			return LayerInfo{}, &LimitError{What: "layer has too many entries", Field: "Entries", Limit: int64(u.lim.Entries)}
		}
		if err := u.entry(hdr, tr); err != nil {
			var le *LimitError
			if errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return LayerInfo{}, err
			}
			return LayerInfo{}, &EntryError{Entry: hdr.Name, Err: err}
		}
	}
	// What follows the end-of-archive blocks is part of the layer blob too.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return LayerInfo{}, fmt.Errorf("read layer archive: %w", err)
	}
	if err := u.finishDirs(); err != nil {
		return LayerInfo{}, err
	}
	u.info.DiffID = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
	u.info.Size = cr.n
	return u.info, nil
}

// entry writes one archive entry.
func (u *unpacker) entry(h *tar.Header, data io.Reader) error {
	name, err := cleanName(h.Name)
	if err != nil {
		return err
	}
	if name == "" {
		if h.Typeflag != tar.TypeDir {
			return fmt.Errorf("%w: the entry for the layer's root is not a directory", ErrUnsafe)
		}
		u.dirs[""] = u.meta(name, h, u.dirs[""])
		return nil
	}
	dir, base := splitName(name)
	if strings.HasPrefix(base, whiteoutPrefix) {
		return u.whiteout(name, dir, base)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return u.mkdir(name, dir, base, h)
	case tar.TypeReg, tar.TypeGNUSparse:
		return u.file(name, dir, base, h, data)
	case tar.TypeSymlink:
		return u.symlink(name, dir, base, h)
	case tar.TypeLink:
		return u.hardlink(name, dir, base, h)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		// An unprivileged sandbox could not open a device from its root anyway
		// (nodev); its /dev is its own. Nothing but overlay whiteouts made from
		// ".wh." entries is ever created as a special file.
		kind := map[byte]string{tar.TypeChar: "character device", tar.TypeBlock: "block device", tar.TypeFifo: "fifo"}[h.Typeflag]
		u.info.adjust(name, AdjDevice, fmt.Sprintf("%s %d:%d not created", kind, h.Devmajor, h.Devminor))
		return nil
	case tar.TypeXGlobalHeader:
		return nil
	default:
		return fmt.Errorf("entry type %q is not a file, directory, link or device", h.Typeflag)
	}
}

// owner returns the host ids of an entry (see IDBase).
func (u *unpacker) owner(name string, h *tar.Header) (uid, gid int) {
	uid, okU := hostID(h.Uid)
	gid, okG := hostID(h.Gid)
	if !okU || !okG {
		u.info.adjust(name, AdjOwner, fmt.Sprintf("%d:%d is outside [0, %d): stored as nobody's", h.Uid, h.Gid, IDCount))
	}
	return uid, gid
}

// perm returns the permission bits an entry gets. Set-ID bits are cleared from
// everything but directories (where set-group-ID only makes new files inherit the
// group): the host must never hold a set-ID file an archive asked for, and in the
// sandbox (nosuid, no_new_privs) they would do nothing.
func (u *unpacker) perm(name string, h *tar.Header, dir bool) uint32 {
	m := uint32(h.Mode) & 0o7777
	if dir {
		return m &^ unix.S_ISUID
	}
	if m&(unix.S_ISUID|unix.S_ISGID) != 0 {
		u.info.adjust(name, AdjSetID, fmt.Sprintf("mode %04o stored as %04o", m, m&^(unix.S_ISUID|unix.S_ISGID)))
		m &^= unix.S_ISUID | unix.S_ISGID
	}
	return m
}

func (u *unpacker) file(name, dir, base string, h *tar.Header, data io.Reader) error {
	if h.Size < 0 {
		return fmt.Errorf("negative size %d", h.Size)
	}
	if h.Size > u.lim.FileSize {
		return &LimitError{What: fmt.Sprintf("file %q is %d bytes", name, h.Size), Field: "FileSize", Limit: u.lim.FileSize}
	}
	if u.info.Bytes += h.Size; u.info.Bytes > u.lim.LayerSize {
		return &LimitError{What: fmt.Sprintf("the layer's files reach %d bytes", u.info.Bytes), Field: "LayerSize", Limit: u.lim.LayerSize}
	}
	pfd, err := u.parent(dir)
	if err != nil {
		return err
	}
	if _, err := u.clear(pfd, name, base, false); err != nil {
		return err
	}
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if err := copySparse(f, data, h.Size, u.buf); err != nil {
		return err
	}
	uid, gid := u.owner(name, h)
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, u.perm(name, h, false)); err != nil {
		return err
	}
	if err := u.setXattrs(name, fd, xattrs(h)); err != nil {
		return err
	}
	if err := setTimes(pfd, base, h.AccessTime, h.ModTime); err != nil {
		return err
	}
	return f.Close()
}

func (u *unpacker) mkdir(name, dir, base string, h *tar.Header) error {
	pfd, err := u.parent(dir)
	if err != nil {
		return err
	}
	isDir, err := u.clear(pfd, name, base, true)
	if err != nil {
		return err
	}
	if !isDir {
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
			return err
		}
	}
	u.dirs[name] = u.meta(name, h, u.dirs[name])
	return nil
}

// symlink creates a symbolic link with the archive's target, whatever it is: it
// is read by the sandbox's kernel inside the sandbox's root, never by the host.
func (u *unpacker) symlink(name, dir, base string, h *tar.Header) error {
	if h.Linkname == "" {
		return errors.New("symbolic link with an empty target")
	}
	if len(h.Linkname) > maxPath {
		return fmt.Errorf("symbolic link target is %d bytes, longer than Linux's %d", len(h.Linkname), maxPath)
	}
	pfd, err := u.parent(dir)
	if err != nil {
		return err
	}
	if _, err := u.clear(pfd, name, base, false); err != nil {
		return err
	}
	if err := unix.Symlinkat(h.Linkname, pfd, base); err != nil {
		return err
	}
	uid, gid := u.owner(name, h)
	if err := unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	for x := range xattrs(h) {
		u.info.adjust(name, AdjXattr, x+": not kept on a symbolic link")
	}
	return setTimes(pfd, base, h.AccessTime, h.ModTime)
}

// hardlink links name to an earlier entry of this layer, found below the layer
// directory without following any symlink; a link to the symlink itself is made
// if the target is one.
func (u *unpacker) hardlink(name, dir, base string, h *tar.Header) error {
	target, err := cleanName(h.Linkname)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if target == "" {
		return fmt.Errorf("%w: hard link to the layer's root", ErrUnsafe)
	}
	if target == name {
		return nil
	}
	tdir, tbase := splitName(target)
	tfd := u.root
	if tdir != "" {
		if tfd, err = u.walk(tdir, false); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("%w: hard link to %q, which is not in this layer", ErrUnsafe, target)
			}
			return fmt.Errorf("hard link target: %w", err)
		}
		defer unix.Close(tfd)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(tfd, tbase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%w: hard link to %q, which is not in this layer", ErrUnsafe, target)
		}
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("%w: hard link to directory %q", ErrUnsafe, target)
	}
	pfd, err := u.parent(dir)
	if err != nil {
		return err
	}
	if _, err := u.clear(pfd, name, base, false); err != nil {
		return err
	}
	return unix.Linkat(tfd, tbase, pfd, base, 0)
}

// whiteout turns an OCI whiteout into overlayfs's form.
func (u *unpacker) whiteout(name, dir, base string) error {
	switch {
	case base == whiteoutOpaque:
		if _, err := u.parent(dir); err != nil {
			return err
		}
		m := u.dirs[dir]
		if m == nil {
			m = &dirMeta{mode: 0o755, uid: IDBase, gid: IDBase}
			u.dirs[dir] = m
		}
		m.opaque = true
		return nil
	case strings.HasPrefix(base, whiteoutMeta):
		u.info.adjust(name, AdjIgnored, "aufs metadata entry")
		return nil
	}
	target := strings.TrimPrefix(base, whiteoutPrefix)
	if target == "" || target == "." || target == ".." {
		return fmt.Errorf("%w: whiteout of %q", ErrUnsafe, target)
	}
	pfd, err := u.parent(dir)
	if err != nil {
		return err
	}
	tname := target
	if dir != "" {
		tname = dir + "/" + target
	}
	if _, err := u.clear(pfd, tname, target, false); err != nil {
		return err
	}
	if err := unix.Mknodat(pfd, target, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("create whiteout: %w", err)
	}
	return unix.Fchownat(pfd, target, IDBase, IDBase, unix.AT_SYMLINK_NOFOLLOW)
}
