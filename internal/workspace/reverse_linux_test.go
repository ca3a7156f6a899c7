package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

// Random trees, random edits: the reverse of the diff of the two trees, applied
// to a copy of the second with git apply and with ApplyPatch, gives back the
// first. A diff Reverse refuses must carry a binary change without its old
// content (Diff writes binary files forward only).
func TestReverseProperty(t *testing.T) {
	scratch := scratchDir(t)
	rapid.Check(t, func(t *rapid.T) {
		base, err := os.MkdirTemp(scratch, "it")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
		os.Mkdir(a, 0o755)
		genTree(t, a)
		copyTree(t, a, b)
		mutate(t, b)
		// A diff carries files, not directories (as git's): a directory the edits
		// left with nothing but empty directories in it cannot become a file again
		// by any patch (git apply: "Directory not empty", found by CI's run), so
		// the tree compared is the edited one without its empty directories.
		removeEmptyDirs(b)
		out, sum, err := DiffTrees(a, b, DiffOptions{Binary: true})
		if err != nil {
			t.Fatalf("DiffTrees: %v", err)
		}
		rev, err := Reverse(out)
		if errors.Is(err, ErrIrreversible) && sum.Binary > 0 {
			t.Skip("a binary change")
		}
		if err != nil {
			t.Fatalf("Reverse: %v\npatch:\n%s", err, out)
		}
		roundTrip(t, b, rev, snapshot(t, a))
	})
}

// removeEmptyDirs removes the directories below root that hold no file, deepest
// first.
func removeEmptyDirs(root string) {
	var dirs []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != root {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // fails, as it should, on a directory that is not empty
	}
}

func TestReverseRefused(t *testing.T) {
	for name, p := range map[string]string{
		"rename":      "diff --git a/g b/h\nsimilarity index 100%\nrename from g\nrename to h\n",
		"binary only": "diff --git a/g b/g\nindex 1..2 100644\nBinary files a/g and b/g differ\n",
	} {
		if _, err := Reverse([]byte(p)); !errors.Is(err, ErrIrreversible) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
