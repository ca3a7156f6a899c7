package image

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExportUpper: an overlayfs upper directory, as a build sandbox leaves it,
// becomes a layer archive that unpacks to the same tree: whiteouts, opaque
// directories, owners, hard links, symlinks and user xattrs kept; what the
// unpacker never keeps (set-ID bits, fifos, overlay's own xattrs) dropped.
func TestExportUpper(t *testing.T) {
	s := newStore(t)
	up := filepath.Join(t.TempDir(), "upper")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(up, "opt/new"), 0o755))
	must(os.WriteFile(filepath.Join(up, "opt/new/file"), []byte("content"), 0o640))
	must(os.Lchown(filepath.Join(up, "opt/new/file"), IDBase+5, IDBase+6))
	must(os.Link(filepath.Join(up, "opt/new/file"), filepath.Join(up, "opt/hard")))
	must(os.Symlink("/etc/passwd", filepath.Join(up, "opt/link")))
	must(unix.Mknod(filepath.Join(up, "opt/gone"), unix.S_IFCHR, 0))
	must(unix.Mkfifo(filepath.Join(up, "opt/fifo"), 0o644))
	must(os.WriteFile(filepath.Join(up, "opt/su"), []byte("x"), 0o755))
	must(unix.Chmod(filepath.Join(up, "opt/su"), 0o4755))
	must(unix.Setxattr(filepath.Join(up, "opt/new"), xattrOpaque, []byte("y"), 0))
	must(unix.Setxattr(filepath.Join(up, "opt/new/file"), "user.note", []byte("kept"), 0))
	must(unix.Setxattr(filepath.Join(up, "opt"), "user.overlay.impure", []byte("y"), 0))

	var buf bytes.Buffer
	must(exportUpper(t.Context(), up, &buf))
	tmp, li, err := s.unpackTemp(t.Context(), &buf)
	defer os.RemoveAll(tmp)
	must(err)
	got := filepath.Join(tmp, "root")

	if b, _ := os.ReadFile(filepath.Join(got, "opt/new/file")); string(b) != "content" {
		t.Errorf("file = %q", b)
	}
	st := lstat(t, filepath.Join(got, "opt/new/file"))
	if st.Uid != IDBase+5 || st.Gid != IDBase+6 || st.Mode&0o777 != 0o640 {
		t.Errorf("file: %d:%d %o", st.Uid, st.Gid, st.Mode&0o777)
	}
	if hl := lstat(t, filepath.Join(got, "opt/hard")); hl.Ino != st.Ino {
		t.Error("hard link not kept")
	}
	if l, _ := os.Readlink(filepath.Join(got, "opt/link")); l != "/etc/passwd" {
		t.Errorf("symlink -> %q", l)
	}
	if w := lstat(t, filepath.Join(got, "opt/gone")); w.Mode&unix.S_IFMT != unix.S_IFCHR || w.Rdev != 0 {
		t.Errorf("whiteout: mode %o rdev %d", w.Mode, w.Rdev)
	}
	v := make([]byte, 16)
	if n, err := unix.Lgetxattr(filepath.Join(got, "opt/new"), xattrOpaque, v); err != nil || string(v[:n]) != "y" {
		t.Errorf("opaque: %q, %v", v[:n], err)
	}
	if n, err := unix.Lgetxattr(filepath.Join(got, "opt/new/file"), "user.note", v); err != nil || string(v[:n]) != "kept" {
		t.Errorf("user.note: %q, %v", v[:n], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(got, "opt"), "user.overlay.impure", v); !errors.Is(err, unix.ENODATA) {
		t.Errorf("user.overlay.impure kept: %v", err)
	}
	if fi, _ := os.Lstat(filepath.Join(got, "opt/su")); fi.Mode()&os.ModeSetuid != 0 {
		t.Error("set-user-ID kept")
	}
	if _, err := os.Lstat(filepath.Join(got, "opt/fifo")); !os.IsNotExist(err) {
		t.Errorf("fifo created: %v", err)
	}
	kinds := map[string]int{}
	for _, a := range li.Adjustments {
		kinds[a.Kind]++
	}
	if kinds[AdjSetID] != 1 || kinds[AdjDevice] != 1 {
		t.Errorf("adjustments %v", li.Adjustments)
	}
}
