package image

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// unpackTest unpacks archive into a fresh layer directory and returns it.
func unpackTest(t *testing.T, archive []byte, lim Limits) (string, LayerInfo, error) {
	t.Helper()
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "layer")
	info, err := unpack(context.Background(), bytes.NewReader(archive), dir, lim)
	return dir, info, err
}

func lstat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

// TestUnpackTree: files, directories, links, modes, times and owners come out as
// the archive says, owners moved into the foreign range.
func TestUnpackTree(t *testing.T) {
	file := reg("usr/bin/tool", "#!/bin/sh\necho hi\n")
	file.Mode, file.Uid, file.Gid = 0o755, 0, 0
	owned := reg("home/user/notes", "mine")
	owned.Uid, owned.Gid = 1000, 1000
	ro := dir("etc/ro/")
	ro.Mode = 0o555
	sticky := dir("tmp/")
	sticky.Mode = 0o1777
	xa := reg("etc/x", "x")
	xa.PAXRecords = map[string]string{"SCHILY.xattr.user.comment": "kept"}
	archive := mkTar(t,
		dir("./"), dir("usr/"), dir("usr/bin/"), file, dir("home/"), dir("home/user/"), owned,
		ro, reg("etc/ro/file", "inside a read-only dir"), sticky, xa,
		symlink("bin", "usr/bin"), symlink("etc/abs", "/etc/passwd"), hardlink("usr/bin/tool2", "usr/bin/tool"),
	)
	layer, info, err := unpackTest(t, archive, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// 14 entries, and etc/, which no entry names but two need.
	if info.Entries != 15 || info.Adjusted != 0 {
		t.Errorf("entries %d, adjusted %d (%v)", info.Entries, info.Adjusted, info.Adjustments)
	}
	if b, _ := os.ReadFile(filepath.Join(layer, "usr/bin/tool")); string(b) != file.data {
		t.Errorf("usr/bin/tool = %q", b)
	}
	for p, want := range map[string]struct {
		mode     os.FileMode
		uid, gid uint32
	}{
		"usr/bin/tool":    {0o755, IDBase, IDBase},
		"home/user/notes": {0o644, IDBase + 1000, IDBase + 1000},
		"etc/ro":          {os.ModeDir | 0o555, IDBase, IDBase},
		"tmp":             {os.ModeDir | os.ModeSticky | 0o777, IDBase, IDBase},
		"bin":             {os.ModeSymlink | 0o777, IDBase, IDBase},
		".":               {os.ModeDir | 0o755, IDBase, IDBase},
	} {
		fi, err := os.Lstat(filepath.Join(layer, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != want.mode || st.Uid != want.uid || st.Gid != want.gid {
			t.Errorf("%s: mode %v owner %d:%d, want %v %d:%d", p, fi.Mode(), st.Uid, st.Gid, want.mode, want.uid, want.gid)
		}
		if p != "." && !fi.ModTime().Equal(testTime) {
			t.Errorf("%s: mtime %v, want %v", p, fi.ModTime(), testTime)
		}
	}
	if l, _ := os.Readlink(filepath.Join(layer, "etc/abs")); l != "/etc/passwd" {
		t.Errorf("etc/abs -> %q", l)
	}
	if a, b := lstat(t, filepath.Join(layer, "usr/bin/tool")), lstat(t, filepath.Join(layer, "usr/bin/tool2")); a.Ino != b.Ino || a.Nlink != 2 {
		t.Errorf("hard link: inodes %d, %d, nlink %d", a.Ino, b.Ino, a.Nlink)
	}
	buf := make([]byte, 64)
	n, err := unix.Lgetxattr(filepath.Join(layer, "etc/x"), "user.comment", buf)
	if err != nil || string(buf[:n]) != "kept" {
		t.Errorf("user.comment = %q, %v", buf[:n], err)
	}
}

// TestUnpackWhiteouts: OCI whiteouts become overlayfs's: a 0/0 character device
// for ".wh.NAME", user.overlay.opaque=y on the directory of ".wh..wh..opq".
func TestUnpackWhiteouts(t *testing.T) {
	archive := mkTar(t, dir("etc/"), reg("etc/.wh.gone", ""), dir("opt/"), reg("opt/.wh..wh..opq", ""), reg("opt/new", "n"),
		reg("deep/er/.wh.x", ""), reg("etc/.wh..wh.plnk", ""))
	layer, info, err := unpackTest(t, archive, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"etc/gone", "deep/er/x"} {
		st := lstat(t, filepath.Join(layer, p))
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
			t.Errorf("%s: mode %o rdev %d, want a 0/0 character device", p, st.Mode, st.Rdev)
		}
	}
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(filepath.Join(layer, "opt"), xattrOpaque, buf)
	if err != nil || string(buf[:n]) != "y" {
		t.Errorf("opt: %s = %q, %v", xattrOpaque, buf[:n], err)
	}
	if _, err := os.Lstat(filepath.Join(layer, "opt/new")); err != nil {
		t.Error(err)
	}
	for _, p := range []string{"etc/.wh.gone", "opt/.wh..wh..opq", "etc/.wh..wh.plnk"} {
		if _, err := os.Lstat(filepath.Join(layer, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists (%v)", p, err)
		}
	}
	if info.Adjusted != 1 || info.Adjustments[0].Kind != AdjIgnored {
		t.Errorf("adjustments %v", info.Adjustments)
	}
}

// TestUnpackSparse: a sparse file (PAX GNU sparse 1.0) stays sparse.
func TestUnpackSparse(t *testing.T) {
	const size = 256 << 20
	archive := sparseTar(t, "big", size, []sparseData{{0, "head"}, {size - 4, "tail"}})
	layer, _, err := unpackTest(t, archive, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	st := lstat(t, filepath.Join(layer, "big"))
	if st.Size != size || st.Blocks*512 > 1<<20 {
		t.Errorf("big: size %d, %d bytes on disk; want %d, sparse", st.Size, st.Blocks*512, size)
	}
	f, err := os.Open(filepath.Join(layer, "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, size-4); err != nil || string(b) != "tail" {
		t.Errorf("tail = %q, %v", b, err)
	}
	_ = tar.TypeReg
}
