package workspace

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzTree is a small workspace next to a canary, for fuzz targets that must never
// touch anything outside.
type fuzzTree struct {
	root, canary string
	outside      []string
	mtime        time.Time
}

func newFuzzTree(t *testing.T) *fuzzTree {
	base := scratchDir(t)
	ft := &fuzzTree{root: filepath.Join(base, "root"), canary: filepath.Join(base, "canary")}
	writeTree(t, base, map[string]string{"canary": secret, "outdir/x": secret})
	writeTree(t, ft.root, patchBase)
	writeTree(t, ft.root, map[string]string{"esc": "->../outdir", "abs": "->" + ft.canary})
	ft.mtime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(ft.canary, ft.mtime, ft.mtime)
	ft.outside = ft.listOutside()
	return ft
}

func (ft *fuzzTree) listOutside() []string {
	base := filepath.Dir(ft.root)
	var l []string
	filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if p == ft.root {
			return filepath.SkipDir
		}
		l = append(l, p)
		return nil
	})
	return l
}

func (ft *fuzzTree) check(t *testing.T) {
	data, err := os.ReadFile(ft.canary)
	fi, _ := os.Stat(ft.canary)
	if err != nil || string(data) != secret || !fi.ModTime().Equal(ft.mtime) {
		t.Fatalf("canary changed")
	}
	if got := ft.listOutside(); strings.Join(got, "\n") != strings.Join(ft.outside, "\n") {
		t.Fatalf("outside changed: %q", got)
	}
}

// ApplyPatch on arbitrary input never panics, never writes outside the root, and
// when it fails it has changed nothing.
func FuzzApplyPatch(f *testing.F) {
	seeds := []string{
		"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n",
		"--- a/g\n+++ b/g\n@@ -1 +1 @@\n-g\n+G\n",
		"diff --git a/n b/n\nnew file mode 100755\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+hi\n",
		"diff --git a/g b/g\ndeleted file mode 100644\n--- a/g\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n",
		"diff --git a/g b/h\nsimilarity index 100%\nrename from g\nrename to h\n",
		"diff --git a/run b/run\nold mode 100755\nnew mode 100644\n",
		"diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+../outdir\n\\ No newline at end of file\n",
		"--- /dev/null\n+++ b/../evil\n@@ -0,0 +1 @@\n+x\n",
		"--- /dev/null\n+++ b/esc/evil\n@@ -0,0 +1 @@\n+x\n",
		"--- a/abs\n+++ b/abs\n@@ -1 +1 @@\n-x\n+y\n",
		"diff --git a/esc b/esc\ndeleted file mode 120000\n--- a/esc\n+++ /dev/null\n@@ -1 +0,0 @@\n-../outdir\n\\ No newline at end of file\ndiff --git a/esc/x b/esc/x\nnew file mode 100644\n--- /dev/null\n+++ b/esc/x\n@@ -0,0 +1 @@\n+x\n",
		"diff --git a/bin b/bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..3b18e512dba79e4c8300dd08aeb37f8e728b8dad\nGIT binary patch\nliteral 12\nTcmeZB&B@6uPA$sH&ji#E5|;xE\n\n",
		"diff --git \"a/q\\134\" \"b/q\\134\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/q\\134\"\n@@ -0,0 +1 @@\n+x\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		ft := newFuzzTree(t)
		before := snapshot(t, ft.root)
		r, err := OpenRoot(ft.root, Options{MaxFileBytes: 1 << 16, MaxTotalBytes: 1 << 20, MaxEntries: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, err = r.ApplyPatch(patch)
		ft.check(t)
		after := snapshot(t, ft.root)
		for p := range after {
			if strings.Contains(p, ".agentbox-tmp") {
				t.Fatalf("temporary file left: %q", p)
			}
		}
		if err != nil {
			if d := diffSnap(before, after); d != "" {
				t.Fatalf("failed patch (%v) changed the tree:\n%s", err, d)
			}
		}
	})
}

// Every Root operation on an arbitrary path never panics and never reaches outside
// the root.
func FuzzRootPath(f *testing.F) {
	for _, s := range []string{"f", "sub/x", "../canary", "/etc/passwd", "esc/x", "abs", "dirin/x", "loop", "a\x00b", "sub/../../canary", ".", ""} {
		for op := range byte(10) {
			f.Add(s, op)
		}
	}
	f.Fuzz(func(t *testing.T, p string, op byte) {
		ft := newFuzzTree(t)
		r, err := OpenRoot(ft.root, Options{MaxEntries: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []byte
		switch op % 10 {
		case 0:
			out, _ = r.ReadFile(p, 0, 0)
		case 1:
			r.WriteFile(p, []byte("w"), 0o644)
		case 2:
			e, _ := r.Stat(p)
			out = []byte(e.Name)
		case 3:
			ents, _ := r.List(p)
			for _, e := range ents {
				out = append(out, e.Name...)
			}
		case 4:
			r.Mkdir(p)
		case 5:
			r.Remove(p)
		case 6:
			r.RemoveAll(p)
		case 7:
			r.StrReplace(p, "g", "G")
		case 8:
			var buf bytes.Buffer
			r.TarTo(&buf, p)
			out = buf.Bytes()
		case 9:
			var buf bytes.Buffer
			r.TarTo(&buf, "sub")
			r.UntarFrom(io.MultiReader(&buf), p)
		}
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("op %d on %q returned the canary", op%10, p)
		}
		ft.check(t)
	})
}
