package image

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// hostileCase is an archive that tries to write outside its layer directory, or
// to plant something the host or the sandbox must not get. sentinel is a
// directory beside the layer (holding "file"); marker is an absolute host path
// under /tmp that must never be created.
type hostileCase struct {
	name string
	tar  func(t testing.TB, sentinel, marker string) []byte
	// want is the error the import must fail with (ErrUnsafe, or a *LimitError
	// when limit is set); nil means the entry is neutralised and check says how.
	want  error
	limit bool
	lim   Limits
	check func(t *testing.T, layer string, info LayerInfo)
}

func hostileCases() []hostileCase {
	noSuch := func(t *testing.T, p string) {
		t.Helper()
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists (%v)", p, err)
		}
	}
	return []hostileCase{
		{name: "dotdot", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg("../sentinel/file", "pwned"))
		}},
		{name: "dotdot inside", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, dir("a/"), reg("a/../../sentinel/file", "pwned"))
		}},
		{name: "dotdot many", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg(strings.Repeat("../", 40)+strings.TrimPrefix(m, "/"), "pwned"))
		}},
		{name: "absolute name lands inside", tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg(m, "inside"), reg("/"+s+"/file", "inside too"))
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			if b, err := os.ReadFile(filepath.Join(layer, "tmp", filepath.Base(markerOf(t)))); err != nil || string(b) != "inside" {
				t.Errorf("absolute name not unpacked inside the layer: %q, %v", b, err)
			}
		}},
		{name: "file through absolute symlink", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("a", s), reg("a/file", "pwned"))
		}},
		{name: "file through symlink to root", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("etc", "/"), reg("etc/"+strings.TrimPrefix(m, "/"), "pwned"))
		}},
		{name: "file through relative symlink", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("a", "../sentinel"), reg("a/file", "pwned"))
		}},
		{name: "directory through symlink", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("a", s), dir("a/newdir/"))
		}},
		{name: "symlink chain", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, dir("d/"), symlink("d/up", ".."), symlink("d/up2", "up/.."), reg("d/up2/sentinel/file", "pwned"))
		}},
		{name: "directory replaced by symlink, then written through", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			// The unpacker caches the last parent directory: replacing it must
			// not leave a stale descriptor that is written through.
			return mkTar(t, dir("d/"), reg("d/one", "1"), symlink("d", s), reg("d/file", "pwned"))
		}},
		{name: "file replaces symlink, not its target", tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("link", filepath.Join(s, "file")), reg("link", "replaced the link"))
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			fi, err := os.Lstat(filepath.Join(layer, "link"))
			if err != nil || !fi.Mode().IsRegular() {
				t.Errorf("link: %v, %v; want a regular file", fi, err)
			}
		}},
		{name: "hard link out of the layer", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, hardlink("h", "../sentinel/file"))
		}},
		{name: "hard link to an absolute host path", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, hardlink("h", filepath.Join(s, "file")))
		}},
		{name: "hard link through a symlink", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("d", s), hardlink("h", "d/file"))
		}},
		{name: "hard link to a symlink, then a file through it", tar: func(t testing.TB, s, m string) []byte {
			// h becomes a second name of the symlink itself; the file entry h
			// then replaces that name, it never writes the symlink's target.
			return mkTar(t, symlink("s", filepath.Join(s, "file")), hardlink("h", "s"), reg("h", "pwned?"))
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			if l, err := os.Readlink(filepath.Join(layer, "s")); err != nil || !strings.HasSuffix(l, "sentinel/file") {
				t.Errorf("s -> %q, %v", l, err)
			}
		}},
		{name: "hard link then file overwrites only the name", tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg("a", "original"), hardlink("b", "a"), reg("b", "new"))
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			if b, _ := os.ReadFile(filepath.Join(layer, "a")); string(b) != "original" {
				t.Errorf("a = %q, want the original: b's entry wrote through the hard link", b)
			}
		}},
		{name: "hard link to a directory", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, dir("d/"), hardlink("h", "d"))
		}},
		{name: "hard link to the layer root", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, hardlink("h", "./"))
		}},
		{name: "device nodes and fifos are not created", tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t,
				ent{Header: tar.Header{Typeflag: tar.TypeChar, Name: "dev/mem", Devmajor: 1, Devminor: 1, Mode: 0o666}},
				ent{Header: tar.Header{Typeflag: tar.TypeBlock, Name: "dev/sda", Devmajor: 8, Devminor: 0, Mode: 0o666}},
				ent{Header: tar.Header{Typeflag: tar.TypeChar, Name: "fake-whiteout", Mode: 0o666}},
				ent{Header: tar.Header{Typeflag: tar.TypeFifo, Name: "fifo", Mode: 0o666}})
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			for _, p := range []string{"dev/mem", "dev/sda", "fake-whiteout", "fifo"} {
				noSuch(t, filepath.Join(layer, p))
			}
			if info.Adjusted != 4 || info.Adjustments[0].Kind != AdjDevice {
				t.Errorf("adjustments %v", info.Adjustments)
			}
		}},
		{name: "set-ID bits cleared", tar: func(t testing.TB, s, m string) []byte {
			su := reg("usr/bin/su", "\x7fELF")
			su.Mode = 0o4755
			sg := reg("usr/bin/wall", "\x7fELF")
			sg.Mode = 0o2755
			gdir := dir("var/mail/")
			gdir.Mode = 0o2775
			return mkTar(t, su, sg, gdir)
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			for _, p := range []string{"usr/bin/su", "usr/bin/wall"} {
				if fi, _ := os.Lstat(filepath.Join(layer, p)); fi == nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
					t.Errorf("%s: mode %v, want 0755 without set-ID", p, fi.Mode())
				}
			}
			if fi, _ := os.Lstat(filepath.Join(layer, "var/mail")); fi.Mode()&os.ModeSetgid == 0 {
				t.Errorf("var/mail: mode %v, want set-group-ID kept on a directory", fi.Mode())
			}
			if info.Adjusted != 2 || info.Adjustments[0].Kind != AdjSetID {
				t.Errorf("adjustments %v", info.Adjustments)
			}
		}},
		{name: "capabilities and overlay xattrs dropped", tar: func(t testing.TB, s, m string) []byte {
			f := reg("usr/bin/ping", "\x7fELF")
			f.PAXRecords = map[string]string{
				"SCHILY.xattr.security.capability":      "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
				"SCHILY.xattr.trusted.overlay.redirect": "/etc",
				"SCHILY.xattr.user.overlay.whiteout":    "y",
			}
			d := dir("opt/")
			d.PAXRecords = map[string]string{"SCHILY.xattr.user.overlay.opaque": "y"}
			return mkTar(t, f, d)
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			buf := make([]byte, 256)
			for p, attrs := range map[string][]string{
				"usr/bin/ping": {"security.capability", "trusted.overlay.redirect", "user.overlay.whiteout"},
				"opt":          {xattrOpaque},
			} {
				for _, a := range attrs {
					if _, err := unix.Lgetxattr(filepath.Join(layer, p), a, buf); !errors.Is(err, unix.ENODATA) {
						t.Errorf("%s: xattr %s present (%v)", p, a, err)
					}
				}
			}
			if info.Adjusted != 4 {
				t.Errorf("adjustments %v", info.Adjustments)
			}
		}},
		{name: "whiteout of dotdot", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, dir("a/"), reg("a/.wh...", ""))
		}},
		{name: "whiteout of nothing", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg("a/.wh.", ""))
		}},
		{name: "whiteout through a symlink", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("a", s), reg("a/.wh.file", ""))
		}},
		{name: "opaque marker through a symlink", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, symlink("a", s), reg("a/.wh..wh..opq", ""))
		}},
		{name: "huge sparse file", want: &LimitError{}, limit: true, tar: func(t testing.TB, s, m string) []byte {
			return sparseTar(t, "huge", 1<<40, []sparseData{{1<<40 - 4, "tail"}})
		}},
		{name: "files over the layer size", want: &LimitError{}, limit: true, lim: Limits{LayerSize: 100}, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg("a", strings.Repeat("a", 60)), reg("b", strings.Repeat("b", 60)))
		}},
		{name: "too many entries", want: &LimitError{}, limit: true, lim: Limits{Entries: 10}, tar: func(t testing.TB, s, m string) []byte {
			var ents []ent
			for i := range 11 {
				ents = append(ents, reg("f"+string(rune('a'+i)), ""))
			}
			return mkTar(t, ents...)
		}},
		{name: "implicit directories count as entries", want: &LimitError{}, limit: true, lim: Limits{Entries: 10}, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg(strings.Repeat("d/", 20)+"f", "x"))
		}},
		{name: "component longer than NAME_MAX", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg(strings.Repeat("n", 256), "x"))
		}},
		{name: "name longer than PATH_MAX", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg(strings.Repeat("d/", 2048)+"f", "x"))
		}},
		{name: "long names through PAX work", tar: func(t testing.TB, s, m string) []byte {
			long := strings.Repeat("l", 200) + "/" + strings.Repeat("m", 250)
			return mkTar(t, reg(long, "ok"), symlink(long+".link", strings.Repeat("t", 1000)))
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			if b, err := os.ReadFile(filepath.Join(layer, strings.Repeat("l", 200), strings.Repeat("m", 250))); err != nil || string(b) != "ok" {
				t.Errorf("long name: %q, %v", b, err)
			}
		}},
		{name: "duplicates: the last entry wins", tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg("f", "first"), reg("f", "second"), dir("d/"), reg("d/x", "x"), reg("d", "file now"),
				reg("g", "file"), dir("g/"), reg("./h", "dot-slash"), reg(".//h", "dot-slash again"))
		}, check: func(t *testing.T, layer string, info LayerInfo) {
			for p, want := range map[string]string{"f": "second", "d": "file now", "h": "dot-slash again"} {
				if b, _ := os.ReadFile(filepath.Join(layer, p)); string(b) != want {
					t.Errorf("%s = %q, want %q", p, b, want)
				}
			}
			if fi, err := os.Lstat(filepath.Join(layer, "g")); err != nil || !fi.IsDir() {
				t.Errorf("g: %v, %v; want a directory", fi, err)
			}
		}},
		{name: "root entry that is not a directory", want: ErrUnsafe, tar: func(t testing.TB, s, m string) []byte {
			return mkTar(t, reg(".", "x"))
		}},
	}
}

// markerOf is the test's host marker path: an absolute path under /tmp that a
// hostile archive names, and that must never appear.
func markerOf(t *testing.T) string {
	if m, ok := markers[t.Name()]; ok {
		return m
	}
	b := make([]byte, 8)
	rand.Read(b)
	m := "/tmp/agentbox-image-marker-" + hex.EncodeToString(b)
	markers[t.Name()] = m
	return m
}

var markers = map[string]string{}

// TestHostileArchives is the attacker's test of the unpacker: each archive tries
// to escape its layer directory or plant what the host must not hold. The
// directory beside the layer and the /tmp marker must be untouched, and the
// import must fail with the expected error or neutralise the entry.
func TestHostileArchives(t *testing.T) {
	testenv.RequireRoot(t)
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			sentinel := filepath.Join(base, "sentinel")
			if err := os.Mkdir(sentinel, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sentinel, "file"), []byte("original"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := testenv.TreeHash(t, sentinel)
			marker := markerOf(t)
			t.Cleanup(func() {
				if _, err := os.Lstat(marker); !os.IsNotExist(err) {
					os.Remove(marker)
					t.Errorf("host marker %s was created", marker)
				}
			})
			layer := filepath.Join(base, "layer")
			_, err := unpack(t.Context(), bytesReader(c.tar(t, sentinel, marker)), layer, c.lim)
			switch {
			case c.limit:
				var le *LimitError
				if !errors.As(err, &le) {
					t.Fatalf("err = %v, want a LimitError", err)
				}
			case c.want != nil:
				if !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %v", err, c.want)
				}
			case err != nil:
				t.Fatalf("err = %v, want the entry neutralised", err)
			}
			if c.check != nil {
				info, _ := unpack(t.Context(), bytesReader(c.tar(t, sentinel, marker)), filepath.Join(base, "again"), c.lim)
				c.check(t, filepath.Join(base, "again"), info)
			}
			if testenv.TreeHash(t, sentinel) != before {
				t.Error("the directory beside the layer changed")
			}
			if du := diskUsage(t, layer); du > 1<<20 {
				t.Errorf("layer directory holds %d bytes", du)
			}
		})
	}
}

// diskUsage is the disk space used under dir (0 if it does not exist).
func diskUsage(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	return n
}
