package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/agentbox/agentbox/internal/testenv"
)

var (
	propNames = []string{"a", "b", "c.txt", "sp ace", "nl\nx", "t\tab", "q\"uote", "back\\", "ü", "bad\xff", "-dash", ".hidden", "#hash"}
	propLines = []string{"alpha\n", "beta\n", "gamma\n", "\n", "  indented\n", "tab\there\n", "crlf\r\n", "ü\n", "\xfe\xff\n", "+plus\n", "-minus\n", "@@ -1 +1 @@\n", "diff --git a/x b/x\n"}
	// Symlink targets that dangle (inside or outside the tree) but never name a
	// directory outside it, so that no operation below can be steered out, nor
	// another generated entry, so that there are no loops: git apply cannot create a
	// path below a symlink loop that the same patch deletes (it lstats the path
	// first and takes ELOOP for an error). ApplyPatch can; see TestApplyPatch.
	propTargets = []string{"target", "dir/file", "../up", "/nonexistent-agentbox/x", "tgt space", "nl\ntgt"}
)

func drawContent(t *rapid.T) string {
	if rapid.IntRange(0, 7).Draw(t, "binary") == 0 {
		return "\x00" + string(rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "bytes"))
	}
	n := rapid.IntRange(0, 24).Draw(t, "lines")
	var b strings.Builder
	for range n {
		b.WriteString(rapid.SampledFrom(propLines).Draw(t, "line"))
	}
	s := b.String()
	if rapid.Bool().Draw(t, "noeol") {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

func drawPath(t *rapid.T) string {
	n := rapid.IntRange(1, 3).Draw(t, "depth")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = rapid.SampledFrom(propNames).Draw(t, "name")
	}
	return filepath.Join(parts...)
}

// parentsPlain reports whether every parent of p below dir is a real directory (or
// missing), so that operating on p cannot follow a symlink anywhere.
func parentsPlain(dir, p string) bool {
	for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
		fi, err := os.Lstat(filepath.Join(dir, d))
		if err == nil && !fi.IsDir() {
			return false
		}
	}
	return true
}

// genTree fills dir with random files, executables and symlinks.
func genTree(t *rapid.T, dir string) {
	for range rapid.IntRange(0, 14).Draw(t, "entries") {
		p := drawPath(t)
		if !parentsPlain(dir, p) {
			continue
		}
		full := filepath.Join(dir, p)
		if os.MkdirAll(filepath.Dir(full), 0o755) != nil {
			continue
		}
		if _, err := os.Lstat(full); err == nil {
			continue
		}
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 0:
			os.Symlink(rapid.SampledFrom(propTargets).Draw(t, "target"), full)
		case 1:
			os.WriteFile(full, []byte(drawContent(t)), 0o755)
		default:
			os.WriteFile(full, []byte(drawContent(t)), 0o644)
		}
	}
}

// mutate applies random edits to the tree at dir (a plain copy or an overlay's
// merged view): edit, append to, delete, create, retype, chmod and rename entries.
// It never writes through a symlink.
func mutate(t *rapid.T, dir string) {
	for range rapid.IntRange(1, 12).Draw(t, "edits") {
		var existing []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != dir {
				rel, _ := filepath.Rel(dir, p)
				existing = append(existing, rel)
			}
			return nil
		})
		p := drawPath(t)
		if len(existing) > 0 && rapid.IntRange(0, 3).Draw(t, "pick existing") > 0 {
			p = rapid.SampledFrom(existing).Draw(t, "existing")
		}
		if !parentsPlain(dir, p) {
			continue
		}
		full := filepath.Join(dir, p)
		fi, statErr := os.Lstat(full)
		isFile := statErr == nil && fi.Mode().IsRegular()
		switch rapid.IntRange(0, 7).Draw(t, "op") {
		case 0: // rewrite a file (or create one where nothing is)
			if statErr != nil || isFile {
				os.MkdirAll(filepath.Dir(full), 0o755)
				writeNoFollow(full, drawContent(t))
			}
		case 1: // append a line
			if isFile {
				if f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0); err == nil {
					f.WriteString(rapid.SampledFrom(propLines).Draw(t, "appended"))
					f.Close()
				}
			}
		case 2: // delete, a whole directory included
			os.RemoveAll(full)
		case 3: // a new directory with a file, replacing what is there (an overlay
			// makes it opaque if a lower directory was there)
			os.RemoveAll(full)
			if os.MkdirAll(full, 0o755) == nil {
				writeNoFollow(filepath.Join(full, rapid.SampledFrom(propNames).Draw(t, "child")), drawContent(t))
			}
		case 4: // replace by a symlink
			os.RemoveAll(full)
			os.MkdirAll(filepath.Dir(full), 0o755)
			os.Symlink(rapid.SampledFrom(propTargets).Draw(t, "target"), full)
		case 5: // toggle the executable bit
			if isFile {
				os.Chmod(full, fi.Mode().Perm()^0o111)
			}
		case 6: // replace by a file
			os.RemoveAll(full)
			os.MkdirAll(filepath.Dir(full), 0o755)
			writeNoFollow(full, drawContent(t))
		case 7: // rename (an overlay refuses to rename lower directories: EXDEV)
			to := filepath.Join(dir, drawPath(t))
			if parentsPlain(dir, to[len(dir)+1:]) && os.MkdirAll(filepath.Dir(to), 0o755) == nil {
				os.Rename(full, to)
			}
		}
	}
}

func writeNoFollow(p, content string) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return
	}
	f.WriteString(content)
	f.Close()
}

// Random trees, random edits: the diff of the two trees, applied to a copy of the
// first with git apply and with ApplyPatch, reproduces the second.
func TestDiffTreesProperty(t *testing.T) {
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
		out, _, err := DiffTrees(a, b, DiffOptions{Binary: true})
		if err != nil {
			t.Fatalf("DiffTrees: %v", err)
		}
		roundTrip(t, a, out, snapshot(t, b))
	})
}

// The same through a real overlay mounted with userxattr, as the sandbox mounts
// /workspace: edits go through the merged view, the kernel writes the upper layer
// (copy-ups, whiteouts, opaque directories), and Diff of the two layers, applied to
// a copy of the lower one, reproduces the merged view.
func TestDiffOverlayProperty(t *testing.T) {
	testenv.RequireRoot(t)
	scratch := scratchDir(t)
	rapid.Check(t, func(t *rapid.T) {
		base, err := os.MkdirTemp(scratch, "it")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		lower, upper, work, merged := filepath.Join(base, "l"), filepath.Join(base, "u"), filepath.Join(base, "w"), filepath.Join(base, "m")
		for _, d := range []string{lower, upper, work, merged} {
			os.Mkdir(d, 0o755)
		}
		genTree(t, lower)
		unmount := mountOverlay(t, lower, upper, work, merged)
		mutate(t, merged)
		want := snapshot(t, merged)
		unmount()
		out, _, err := Diff(lower, upper, DiffOptions{Binary: true})
		if err != nil {
			t.Fatalf("Diff: %v", err)
		}
		roundTrip(t, lower, out, want)
	})
}
