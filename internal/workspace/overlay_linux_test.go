package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// mountOverlay mounts an overlay of upper over lower at merged; with work == "" it
// is a read-only mount of both as lower layers (nothing is written to upper).
// userxattr makes the kernel read user.overlay.* xattrs, as in the sandbox.
// The mount is also undone at cleanup, should the test fail before unmounting.
func mountOverlay(t interface {
	fataler
	Cleanup(func())
}, lower, upper, work, merged string) func() {
	opts := "userxattr,lowerdir=" + upper + ":" + lower
	flags := uintptr(unix.MS_RDONLY)
	if work != "" {
		opts, flags = "userxattr,lowerdir="+lower+",upperdir="+upper+",workdir="+work, 0
	}
	if err := unix.Mount("overlay", merged, "overlay", flags, opts); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	mounted := true
	unmount := func() {
		if mounted {
			mounted = false
			if err := unix.Unmount(merged, 0); err != nil {
				unix.Unmount(merged, unix.MNT_DETACH)
				t.Fatalf("unmount overlay: %v", err)
			}
		}
	}
	t.Cleanup(unmount)
	return unmount
}

func whiteout(t fataler, p string) {
	if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
		t.Fatalf("mknod whiteout: %v", err)
	}
}

func setXattr(t fataler, p, name, value string) {
	if err := unix.Setxattr(p, name, []byte(value), 0); err != nil {
		t.Fatalf("setxattr %s: %v", name, err)
	}
}

// A hand-made upper layer with every kind of overlay entry. The expected view is
// written out, and for the user.* xattr layer it is also what the kernel shows
// when it mounts the same layers: Diff reads layers as overlayfs does.
func TestDiffOverlayLayers(t *testing.T) {
	testenv.RequireRoot(t) // whiteouts, trusted.* xattrs, mount
	lowerFiles := map[string]string{
		"a.txt": "a\n", "gone.txt": "g\n", "dir/x": "x\n", "dir/y": "y\n",
		"opq/old": "o\n", "opq/sub/deep": "d\n", "opqx/keep": "k\n", "tfile": "f\n", "tdir/z": "z\n",
		"deldir/p/q": "q\n", "link": "->a.txt", "run": "#!/bin/sh\n",
	}
	build := func(t *testing.T, opaqueXattr string) (lower, upper string) {
		base := t.TempDir()
		lower, upper = filepath.Join(base, "lower"), filepath.Join(base, "upper")
		writeTree(t, lower, lowerFiles)
		writeTree(t, upper, map[string]string{
			"a.txt": "A\n", "dir/new": "n\n", "opq/fresh": "f\n", "opqx/add": "a\n",
			"tfile/in": "i\n", "tdir": "now file\n", "newdir/f": "f\n", "link": "->dir/x", "run": "x:#!/bin/sh\n",
		})
		whiteout(t, filepath.Join(upper, "gone.txt"))
		whiteout(t, filepath.Join(upper, "dir/y"))
		whiteout(t, filepath.Join(upper, "deldir"))
		whiteout(t, filepath.Join(upper, "newdir/orphan")) // hides nothing
		setXattr(t, filepath.Join(upper, "opq"), opaqueXattr, "y")
		setXattr(t, filepath.Join(upper, "opqx"), "user.overlay.opaque", "x") // not opaque
		return lower, upper
	}
	want := snapOf(map[string]string{
		"a.txt": "A\n", "dir/x": "x\n", "dir/new": "n\n", "opq/fresh": "f\n", "opqx/keep": "k\n", "opqx/add": "a\n",
		"tfile/in": "i\n", "tdir": "now file\n", "newdir/f": "f\n", "link": "->dir/x", "run": "x:#!/bin/sh\n",
	})
	for _, xattr := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		t.Run(xattr, func(t *testing.T) {
			lower, upper := build(t, xattr)
			out, sum, err := Diff(lower, upper, DiffOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Omitted) != 0 {
				t.Fatalf("omitted %+v", sum.Omitted)
			}
			roundTrip(t, lower, out, want)
			if xattr == "user.overlay.opaque" { // the kernel agrees
				merged := filepath.Join(t.TempDir(), "m")
				os.Mkdir(merged, 0o755)
				unmount := mountOverlay(t, lower, upper, "", merged)
				got := snapshot(t, merged)
				unmount()
				if d := diffSnap(want, got); d != "" {
					t.Fatalf("the kernel's view differs from the expected one:\n%s", d)
				}
			}
		})
	}
	t.Run("xattr whiteout", func(t *testing.T) {
		base := t.TempDir()
		lower, upper := filepath.Join(base, "lower"), filepath.Join(base, "upper")
		writeTree(t, lower, map[string]string{"keep": "k\n", "gone": "g\n", "d/gone": "g\n", "empty": ""})
		writeTree(t, upper, map[string]string{"gone": "", "d/gone": "", "empty": ""})
		setXattr(t, filepath.Join(upper, "gone"), "user.overlay.whiteout", "")
		setXattr(t, filepath.Join(upper, "d/gone"), "trusted.overlay.whiteout", "")
		setXattr(t, filepath.Join(upper, "d"), "user.overlay.opaque", "x")
		out, _, err := Diff(lower, upper, DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, lower, out, snapOf(map[string]string{"keep": "k\n", "empty": ""}))
	})
	t.Run("unsupported features", func(t *testing.T) {
		for _, tc := range []struct{ path, xattr string }{{"dir", "user.overlay.redirect"}, {"a.txt", "trusted.overlay.metacopy"}} {
			lower, upper := build(t, "user.overlay.opaque")
			setXattr(t, filepath.Join(upper, tc.path), tc.xattr, "x")
			if _, _, err := Diff(lower, upper, DiffOptions{}); !errorsIs(err, ErrOverlay) {
				t.Errorf("%s on %s: %v", tc.xattr, tc.path, err)
			}
		}
	})
	t.Run("opaque upper root", func(t *testing.T) {
		lower, upper := build(t, "user.overlay.opaque")
		setXattr(t, upper, "user.overlay.opaque", "y")
		out, _, err := Diff(lower, upper, DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, lower, out, snapshot(t, upper)) // nothing of lower shows
	})
}
