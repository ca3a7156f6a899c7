package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const secret = "HOST-SECRET-CANARY"

// hostileTree is a workspace whose entries try every way out: symlinks (absolute,
// relative, to a file or a directory, direct or below a subdirectory) to a canary
// file and directory outside it, a hardlink to the canary, a fifo and a symlink
// loop; next to legitimate in-workspace symlinks.
type hostileTree struct {
	base, root, outside, canary string
	canaryTime                  time.Time
	outsideList                 []string
}

func newHostileTree(t *testing.T) *hostileTree {
	h := &hostileTree{base: t.TempDir()}
	h.root, h.outside = filepath.Join(h.base, "root"), filepath.Join(h.base, "outside")
	h.canary = filepath.Join(h.outside, "canary")
	writeTree(t, h.outside, map[string]string{"canary": secret, "dir/inner": secret})
	writeTree(t, h.root, map[string]string{
		"file":      "in the workspace\n",
		"sub/x":     "x\n",
		"abs":       "->" + h.canary,
		"rel":       "->../outside/canary",
		"dirlink":   "->../outside",
		"absdir":    "->" + h.outside,
		"sub/deep":  "->../../outside/canary",
		"sub/up":    "->../file",
		"inlink":    "->file",
		"dirin":     "->sub",
		"loop":      "->loop",
		"sub/dotup": "->..",
	})
	if err := os.Link(h.canary, filepath.Join(h.root, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(h.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(h.canary, old, old)
	h.canaryTime = old
	h.outsideList = h.listOutside(t)
	return h
}

func (h *hostileTree) listOutside(t *testing.T) []string {
	var l []string
	filepath.WalkDir(h.base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !strings.HasPrefix(p, h.root+"/") && p != h.root {
			l = append(l, p)
		}
		return nil
	})
	return l
}

// check fails unless the canary was left exactly as it was and nothing outside the
// workspace appeared or disappeared.
func (h *hostileTree) check(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(h.canary)
	fi, serr := os.Stat(h.canary)
	if err != nil || serr != nil || string(data) != secret || !fi.ModTime().Equal(h.canaryTime) {
		t.Fatalf("canary changed: %q %v %v", data, err, fi.ModTime())
	}
	if got := h.listOutside(t); !slices.Equal(got, h.outsideList) {
		t.Fatalf("outside the workspace changed:\n%v\nwas\n%v", got, h.outsideList)
	}
}

func (h *hostileTree) open(t *testing.T, o Options) *Root {
	r, err := OpenRoot(h.root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// noHostPath fails if an error shows where the workspace lives on the host.
func noHostPath(t *testing.T, h *hostileTree, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), h.base) && !strings.Contains(err.Error(), h.canary) {
		t.Fatalf("error reveals a host path: %v", err)
	}
}

func TestRootRead(t *testing.T) {
	h := newHostileTree(t)
	r := h.open(t, Options{})
	tests := []struct {
		path string
		want string
		err  error
	}{
		{"file", "in the workspace\n", nil},
		{"inlink", "in the workspace\n", nil}, // symlink inside: followed
		{"sub/up", "in the workspace\n", nil}, // ../ inside: followed
		{"dirin/x", "x\n", nil},               // symlinked parent inside
		{"sub/dotup/file", "in the workspace\n", nil},
		{"sub/../file", "in the workspace\n", nil},
		{"abs", "", ErrEscape},
		{"rel", "", ErrEscape},
		{"dirlink/canary", "", ErrEscape},
		{"absdir/canary", "", ErrEscape},
		{"sub/deep", "", ErrEscape},
		{"dirin/deep", "", ErrEscape},
		{"sub/dotup/../outside/canary", "", fs.ErrNotExist}, // ".." is resolved lexically first
		{"sub/dotup/dirlink/canary", "", ErrEscape},
		{"../outside/canary", "", ErrEscape},
		{h.canary, "", ErrEscape},
		{"hard", "", ErrHardlink},
		{"fifo", "", ErrNotRegular},
		{"sub", "", ErrNotRegular},
		{".", "", ErrInvalidPath},
		{"loop", "", syscall.ELOOP},
		{"missing", "", fs.ErrNotExist},
		{"a\x00b", "", ErrInvalidPath},
	}
	for _, tc := range tests {
		done := make(chan struct{})
		var got []byte
		var err error
		go func() { got, err = r.ReadFile(tc.path, 0, 0); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("ReadFile(%q) blocks", tc.path) // the fifo case
		}
		if !errors.Is(err, tc.err) || string(got) != tc.want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q, %v", tc.path, got, err, tc.want, tc.err)
		}
		noHostPath(t, h, err)
	}
	// Open follows the same rules, without the size cap.
	for _, tc := range tests {
		done := make(chan struct{})
		var got []byte
		var err error
		go func() {
			var f *os.File
			if f, _, err = r.Open(tc.path); err == nil {
				got, err = io.ReadAll(f)
				f.Close()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("Open(%q) blocks", tc.path)
		}
		if !errors.Is(err, tc.err) || string(got) != tc.want {
			t.Errorf("Open(%q) read %q, %v; want %q, %v", tc.path, got, err, tc.want, tc.err)
		}
		noHostPath(t, h, err)
	}
	// With AllowHardlinks the hardlink is read: os.Root cannot tell where its other
	// name is. This is why the default refuses.
	if got, err := h.open(t, Options{AllowHardlinks: true}).ReadFile("hard", 0, 0); err != nil || string(got) != secret {
		t.Fatalf("AllowHardlinks: %q, %v", got, err)
	}
	h.check(t)
}

func TestRootReadRange(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f": "0123456789"})
	r, err := OpenRoot(dir, Options{MaxReadBytes: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tests := []struct {
		off, n int64
		want   string
		err    error
	}{
		{0, 4, "0123", nil},
		{6, 0, "6789", nil},
		{8, 4, "89", nil},
		{10, 0, "", nil},
		{20, 3, "", nil},
		{0, 0, "", ErrTooLarge},
		{2, 5, "", ErrTooLarge},
		{-1, 0, "", fs.ErrInvalid},
		{0, -1, "", fs.ErrInvalid},
	}
	for _, tc := range tests {
		got, err := r.ReadFile("f", tc.off, tc.n)
		if !errors.Is(err, tc.err) || string(got) != tc.want {
			t.Errorf("ReadFile(f, %d, %d) = %q, %v", tc.off, tc.n, got, err)
		}
	}
	_, err = r.ReadFile("f", 0, 0)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 10 || tl.Limit != 4 || tl.Path != "f" {
		t.Fatalf("TooLargeError: %#v", err)
	}
}

func TestRootWrite(t *testing.T) {
	h := newHostileTree(t)
	r := h.open(t, Options{MaxFileBytes: 1 << 10})
	tests := []struct {
		path string
		err  error
	}{
		{"new", nil},
		{"file", nil},
		{"sub/new", nil},
		{"dirin/viaLink", nil}, // symlinked parent inside: written in sub
		{"hard", nil},          // replaces the link; the canary keeps its content
		{"abs", ErrSymlink},
		{"rel", ErrSymlink},
		{"inlink", ErrSymlink},
		{"dirlink/canary", ErrEscape},
		{"dirlink/new", ErrEscape},
		{"absdir/new", ErrEscape},
		{"sub/dotup/dirlink/new", ErrEscape},
		{"../outside/new", ErrEscape},
		{"fifo", ErrNotRegular},
		{"sub", ErrNotRegular},
		{"nodir/new", fs.ErrNotExist},
		{"", ErrInvalidPath},
	}
	for _, tc := range tests {
		err := r.WriteFile(tc.path, []byte("written\n"), 0o600)
		if !errors.Is(err, tc.err) {
			t.Errorf("WriteFile(%q) = %v, want %v", tc.path, err, tc.err)
		}
		noHostPath(t, h, err)
	}
	if data, _ := os.ReadFile(filepath.Join(h.root, "sub/viaLink")); string(data) != "written\n" {
		t.Errorf("write through an inner symlinked parent: %q", data)
	}
	if err := r.WriteFile("big", make([]byte, 2<<10), 0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized write: %v", err)
	}
	// Permissions: a new file gets perm, an existing one keeps its own.
	if fi, _ := os.Stat(filepath.Join(h.root, "new")); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(h.root, "file")); fi.Mode().Perm() != 0o644 {
		t.Errorf("existing file mode %v", fi.Mode())
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(h.root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".agentbox-tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
	h.check(t)
}

func TestRootListStatRemove(t *testing.T) {
	h := newHostileTree(t)
	r := h.open(t, Options{})
	ents, err := r.List("dirin")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "deep,dotup,up,x" || ents[0].Path != "dirin/deep" || ents[0].Mode&fs.ModeSymlink == 0 {
		t.Fatalf("List(dirin) = %+v", ents)
	}
	for _, p := range []string{"dirlink", "absdir", "dirlink/dir", "../outside"} {
		if _, err := r.List(p); !errors.Is(err, ErrEscape) {
			t.Errorf("List(%q) = %v", p, err)
		}
	}
	if _, err := r.List("fifo"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("List(fifo) = %v", err)
	}
	if _, err := h.open(t, Options{MaxEntries: 3}).List("."); !errors.Is(err, ErrLimit) {
		t.Errorf("List over MaxEntries: %v", err)
	}

	e, err := r.Stat("abs") // describes the link, follows nothing
	if err != nil || e.LinkTarget != h.canary || e.Mode&fs.ModeSymlink == 0 {
		t.Fatalf("Stat(abs) = %+v, %v", e, err)
	}
	if e, err := r.Stat("hard"); err != nil || e.Links != 2 || e.Size != int64(len(secret)) {
		t.Fatalf("Stat(hard) = %+v, %v", e, err)
	}
	if _, err := r.Stat("dirlink/canary"); !errors.Is(err, ErrEscape) {
		t.Fatalf("Stat(dirlink/canary) = %v", err)
	}

	for _, tc := range []struct {
		path string
		all  bool
		err  error
	}{
		{"abs", false, nil}, // the link goes, not its target
		{"hard", false, nil},
		{"dirlink", true, nil}, // RemoveAll of a link to a directory removes the link
		{"absdir/canary", false, ErrEscape},
		{"sub/dotup/absdir/canary", true, ErrEscape},
		{".", true, ErrInvalidPath},
		{"", false, ErrInvalidPath},
		{"sub", false, syscall.ENOTEMPTY},
		{"sub", true, nil},
	} {
		remove := r.Remove
		if tc.all {
			remove = r.RemoveAll
		}
		if err := remove(tc.path); !errors.Is(err, tc.err) {
			t.Errorf("remove(%q, all=%v) = %v, want %v", tc.path, tc.all, err, tc.err)
		}
	}
	if err := r.Mkdir("a/b/c"); err != nil {
		t.Fatal(err)
	}
	if err := r.Mkdir("absdir/x"); !errors.Is(err, ErrEscape) {
		t.Fatalf("Mkdir through an escaping link: %v", err)
	}
	h.check(t)
}

func TestStrReplace(t *testing.T) {
	h := newHostileTree(t)
	writeTree(t, h.root, map[string]string{"code.go": "x:a := 1\nb := 2\naaa\n"})
	r := h.open(t, Options{})
	var amb *AmbiguousError
	tests := []struct {
		path, old, new string
		err            error
	}{
		{"code.go", "missing", "x", ErrNoMatch},
		{"code.go", "a", "x", ErrAmbiguous},
		{"code.go", "aa", "x", ErrAmbiguous}, // "aaa" holds it twice, overlapping
		{"code.go", "", "x", fs.ErrInvalid},
		{"code.go", "b := 2", "b := 3", nil},
		{"abs", "HOST", "x", ErrSymlink},
		{"inlink", "in", "x", ErrSymlink},
		{"hard", "HOST", "x", ErrHardlink},
		{"dirlink/canary", "HOST", "x", ErrEscape},
		{"fifo", "x", "y", ErrNotRegular},
	}
	for _, tc := range tests {
		err := r.StrReplace(tc.path, tc.old, tc.new)
		if !errors.Is(err, tc.err) {
			t.Errorf("StrReplace(%q, %q) = %v, want %v", tc.path, tc.old, err, tc.err)
		}
		noHostPath(t, h, err)
	}
	if err := r.StrReplace("code.go", "aa", "x"); !errors.As(err, &amb) || amb.Count != 2 {
		t.Fatalf("ambiguous count: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(h.root, "code.go"))
	fi, _ := os.Stat(filepath.Join(h.root, "code.go"))
	if string(data) != "a := 1\nb := 3\naaa\n" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("after StrReplace: %q %v", data, fi.Mode())
	}
	h.check(t)
}
