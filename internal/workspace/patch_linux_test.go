package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var patchBase = map[string]string{
	"f":     "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
	"g":     "g\n",
	"run":   "x:echo\n",
	"sub/x": "x\n",
	"dirin": "->sub",
	"link":  "->f",
	"loop":  "->loop",
	// hollow holds nothing but empty directories, which no diff carries.
	"hollow/a/b": "/",
}

func TestApplyPatch(t *testing.T) {
	modF := "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n"
	tests := []struct {
		name    string
		patch   string
		changes map[string]string // expected tree: patchBase with these entries replaced ("" deletes)
		err     error
		check   func(t *testing.T, dir string, rep PatchReport, err error)
	}{
		{name: "modify", patch: modF, changes: map[string]string{"f": "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n"},
			check: func(t *testing.T, _ string, rep PatchReport, _ error) {
				if len(rep.Files) != 1 || rep.Files[0] != (PatchedFile{Op: PatchModify, Path: "f", Added: 1, Deleted: 1}) {
					t.Errorf("report %+v", rep)
				}
			}},
		{name: "plain unified a/ b/", patch: "--- a/g\n+++ b/g\n@@ -1 +1 @@\n-g\n+G\n", changes: map[string]string{"g": "G\n"}},
		{name: "plain unified p0", patch: "--- sub/x\t2024-01-01\n+++ sub/x\t2024-01-02\n@@ -1 +1 @@\n-x\n+X\n", changes: map[string]string{"sub/x": "X\n"}},
		{name: "two hunks", patch: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -9,2 +9,2 @@\n 9\n-10\n+ten\n",
			changes: map[string]string{"f": "one\n2\n3\n4\n5\n6\n7\n8\n9\nten\n"}},
		{name: "new delete", patch: "diff --git a/n/new b/n/new\nnew file mode 100755\n--- /dev/null\n+++ b/n/new\n@@ -0,0 +1 @@\n+hi\n" +
			"diff --git a/g b/g\ndeleted file mode 100644\n--- a/g\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n",
			changes: map[string]string{"n/new": "x:hi\n", "g": ""}},
		{name: "delete prunes emptied dirs", patch: "diff --git a/sub/x b/sub/x\ndeleted file mode 100644\n--- a/sub/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
			changes: map[string]string{"sub/x": ""},
			check: func(t *testing.T, dir string, _ PatchReport, _ error) {
				if _, err := os.Lstat(filepath.Join(dir, "sub")); err == nil {
					t.Error("sub kept")
				}
			}},
		{name: "rename", patch: "diff --git a/g b/h/g2\nsimilarity index 100%\nrename from g\nrename to h/g2\n", changes: map[string]string{"g": "", "h/g2": "g\n"},
			check: func(t *testing.T, _ string, rep PatchReport, _ error) {
				if rep.Files[0].Op != PatchRename || rep.Files[0].OldPath != "g" || rep.Files[0].Path != "h/g2" {
					t.Errorf("report %+v", rep)
				}
			}},
		{name: "copy with change", patch: "diff --git a/g b/g3\nsimilarity index 50%\ncopy from g\ncopy to g3\n--- a/g\n+++ b/g3\n@@ -1 +1 @@\n-g\n+g3\n", changes: map[string]string{"g3": "g3\n"}},
		{name: "mode", patch: "diff --git a/run b/run\nold mode 100755\nnew mode 100644\n", changes: map[string]string{"run": "echo\n"}},
		{name: "symlink retarget", patch: "diff --git a/link b/link\nindex 1..2 120000\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-f\n\\ No newline at end of file\n+g\n\\ No newline at end of file\n",
			changes: map[string]string{"link": "->g"}},
		{name: "symlink loop replaced by a directory", patch: "diff --git a/loop b/loop\ndeleted file mode 120000\n--- a/loop\n+++ /dev/null\n@@ -1 +0,0 @@\n-loop\n\\ No newline at end of file\n" +
			"diff --git a/loop/f b/loop/f\nnew file mode 100644\n--- /dev/null\n+++ b/loop/f\n@@ -0,0 +1 @@\n+in\n",
			changes: map[string]string{"loop": "", "loop/f": "in\n"}},
		// A diff carries no directories, so one that puts a file where the tree
		// holds only empty directories (a rewind to before they were made) is
		// applied by removing them, where git apply fails ("Directory not empty").
		{name: "new file over a directory holding only empty ones", patch: "diff --git a/hollow b/hollow\nnew file mode 100644\n--- /dev/null\n+++ b/hollow\n@@ -0,0 +1 @@\n+x\n",
			changes: map[string]string{"hollow": "x\n"},
			check: func(t *testing.T, dir string, _ PatchReport, _ error) {
				if fi, err := os.Lstat(filepath.Join(dir, "hollow")); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("hollow is %v (%v), not a file", fi, err)
				}
			}},
		{name: "garbage between files is skipped", patch: "# agentbox: omitted \"x\": too big\n" + modF + "# note\n",
			changes: map[string]string{"f": "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n"}},

		// Refusals: nothing is written.
		{name: "conflict names the hunk", err: ErrPatch, patch: "diff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-g\n+G\n" + modF + "@@ -5,3 +5,3 @@\n 5\n-six\n+6\n 7\n",
			check: func(t *testing.T, _ string, _ PatchReport, err error) {
				var pe *PatchError
				if !errors.As(err, &pe) || pe.Path != "f" || pe.Hunk != 2 || pe.Header != "@@ -5,3 +5,3 @@" || pe.Line != 6 {
					t.Errorf("error %#v", err)
				}
				if !strings.Contains(err.Error(), `patch f: hunk #2 @@ -5,3 +5,3 @@ at line 6: `) {
					t.Errorf("message %q", err)
				}
			}},
		{name: "later file fails, earlier not written", err: fs.ErrNotExist, patch: modF + "--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-a\n+b\n"},
		{name: "hunks out of order are numbered as in the patch", err: ErrPatch, patch: "--- a/f\n+++ b/f\n@@ -8,3 +8,3 @@\n 8\n-x\n+y\n 10\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n",
			check: func(t *testing.T, _ string, _ PatchReport, err error) {
				var pe *PatchError
				if !errors.As(err, &pe) || pe.Hunk != 1 || pe.Line != 9 {
					t.Errorf("error %#v", err)
				}
			}},
		{name: "dotdot", err: ErrEscape, patch: "--- /dev/null\n+++ b/../evil\n@@ -0,0 +1 @@\n+x\n"},
		{name: "absolute", err: ErrEscape, patch: "--- /dev/null\n+++ /tmp/evil\n@@ -0,0 +1 @@\n+x\n"},
		{name: "git dir", err: ErrInvalidPath, patch: "diff --git a/.git/config b/.git/config\nnew file mode 100644\n--- /dev/null\n+++ b/.git/config\n@@ -0,0 +1 @@\n+x\n"},
		{name: "git dir any case", err: ErrInvalidPath, patch: "--- /dev/null\n+++ b/sub/.GIT/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n"},
		{name: "below a symlink", err: ErrSymlink, patch: "--- /dev/null\n+++ b/dirin/new\n@@ -0,0 +1 @@\n+x\n"},
		{name: "symlink out absolute", err: ErrEscape, patch: "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"},
		{name: "symlink out relative", err: ErrEscape, patch: "diff --git a/sub/l b/sub/l\nnew file mode 120000\n--- /dev/null\n+++ b/sub/l\n@@ -0,0 +1 @@\n+../../x\n\\ No newline at end of file\n"},
		{name: "new over existing", err: fs.ErrExist, patch: "diff --git a/g b/g\nnew file mode 100644\n--- /dev/null\n+++ b/g\n@@ -0,0 +1 @@\n+x\n"},
		{name: "new file over a kept directory", err: fs.ErrExist, patch: "diff --git a/sub b/sub\nnew file mode 100644\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+x\n"},
		{name: "new below a file", err: fs.ErrExist, patch: "--- /dev/null\n+++ b/g/x\n@@ -0,0 +1 @@\n+x\n"},
		{name: "delete with other content", err: ErrPatch, patch: "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-1\n"},
		{name: "text patch on symlink with regular mode", err: ErrSymlink, patch: "diff --git a/link b/link\nindex 1..2 100644\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-f\n\\ No newline at end of file\n+g\n\\ No newline at end of file\n"},
		{name: "binary without data", err: ErrPatch, patch: "diff --git a/g b/g\nindex 1..2 100644\nBinary files a/g and b/g differ\n"},
		{name: "binary over other content", err: ErrPatch, patch: "diff --git a/g b/g\nindex 0123456789012345678901234567890123456789..2a02d41f8c3c8e41e3c7a8e1ef6b4e2e7e9e6b4c 100644\nGIT binary patch\nliteral 1\nIcmZ?d00001\n\n"},
		{name: "no changes", err: ErrPatch, patch: "hello\n"},
		{name: "names differ without rename", err: ErrInvalidPath, patch: "diff --git a/f b/g\n--- a/f\n+++ b/g\n@@ -1 +1 @@\n-1\n+x\n"},
		{name: "malformed", err: ErrPatch, patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, patchBase)
			r, err := OpenRoot(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := r.ApplyPatch([]byte(tc.patch))
			if !errors.Is(err, tc.err) {
				t.Fatalf("ApplyPatch = %v, want %v", err, tc.err)
			}
			want := snapOf(patchBase)
			if err == nil {
				for p, c := range tc.changes {
					if c == "" {
						delete(want, p)
					} else {
						want[p] = snapOf(map[string]string{p: c})[p]
					}
				}
			}
			if d := diffSnap(want, snapshot(t, dir)); d != "" {
				t.Fatalf("tree after ApplyPatch (err %v):\n%s", err, d)
			}
			if tc.check != nil {
				tc.check(t, dir, rep, err)
			}
		})
	}
}

func TestApplyPatchLimits(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, patchBase)
	os.Link(filepath.Join(dir, "g"), filepath.Join(dir, "g.link"))
	r, err := OpenRoot(dir, Options{MaxFileBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ApplyPatch([]byte(strings.Repeat("x", 101))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big patch: %v", err)
	}
	if _, err := r.ApplyPatch([]byte("--- a/g\n+++ b/g\n@@ -1 +1 @@\n-g\n+G\n")); !errors.Is(err, ErrHardlink) {
		t.Errorf("patching a hardlinked file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "big"), []byte("a\n"+strings.Repeat("x", 80)+"\n"), 0o644)
	grow := "--- a/big\n+++ b/big\n@@ -1 +1,2 @@\n a\n+" + strings.Repeat("y", 40) + "\n"
	if _, err := r.ApplyPatch([]byte(grow)); !errors.Is(err, ErrLimit) {
		t.Errorf("result over MaxFileBytes: %v", err)
	}
}
