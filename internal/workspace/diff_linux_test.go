package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// Each case diffs two plain trees, checks the text of the diff, and applies it to a
// copy of the old tree with git apply and with ApplyPatch: both must reproduce the
// new tree.
func TestDiffTrees(t *testing.T) {
	lines := func(n int, change map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if s, ok := change[i]; ok {
				b.WriteString(s)
				continue
			}
			b.WriteString("line " + string(rune('a'+i%26)) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name     string
		old, new map[string]string
		binary   bool
		want     []string // substrings of the diff
		noApply  bool     // the diff cannot reproduce new (binary named only)
	}{
		{"no change", map[string]string{"a": "x\n"}, map[string]string{"a": "x\n"}, false, nil, false},
		{"add", nil, map[string]string{"dir/new.txt": "hello\n"}, false,
			[]string{"diff --git a/dir/new.txt b/dir/new.txt\nnew file mode 100644\n", "--- /dev/null\n+++ b/dir/new.txt\n@@ -0,0 +1,1 @@\n+hello\n"}, false},
		{"delete", map[string]string{"gone": "bye\n"}, nil, false,
			[]string{"deleted file mode 100644\n", "--- a/gone\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n"}, false},
		{"modify with context", map[string]string{"f": lines(20, nil)}, map[string]string{"f": lines(20, map[int]string{10: "changed\n"})}, false,
			[]string{"@@ -7,7 +7,7 @@\n line h\n line i\n line j\n-line k\n+changed\n line l\n"}, false},
		{"two hunks", map[string]string{"f": lines(30, nil)}, map[string]string{"f": lines(30, map[int]string{2: "x\n", 28: "y\n"})}, false,
			[]string{"@@ -1,5 +1,5 @@", "@@ -25,6 +25,6 @@"}, false},
		{"no newline at end", map[string]string{"f": "a\nb"}, map[string]string{"f": "a\nc"}, false,
			[]string{"-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"}, false},
		{"empty files", map[string]string{"gone": ""}, map[string]string{"new": ""}, false,
			[]string{"diff --git a/gone b/gone\ndeleted file mode 100644\n", "diff --git a/new b/new\nnew file mode 100644\n"}, false},
		{"mode only", map[string]string{"run": "#!/bin/sh\n"}, map[string]string{"run": "x:#!/bin/sh\n"}, false,
			[]string{"old mode 100644\nnew mode 100755\n"}, false},
		{"mode and content", map[string]string{"run": "x:a\n"}, map[string]string{"run": "b\n"}, false,
			[]string{"old mode 100755\nnew mode 100644\n", "-a\n+b\n"}, false},
		{"symlink target", map[string]string{"l": "->old/target"}, map[string]string{"l": "->new target"}, false,
			[]string{"index ", " 120000\n", "-old/target\n\\ No newline at end of file\n+new target\n\\ No newline at end of file\n"}, false},
		{"file to symlink", map[string]string{"t": "data\n"}, map[string]string{"t": "->/etc/passwd"}, false,
			[]string{"deleted file mode 100644\n", "new file mode 120000\n", "+/etc/passwd\n"}, false},
		{"file to dir", map[string]string{"d": "file\n"}, map[string]string{"d/inner": "x\n"}, false,
			[]string{"diff --git a/d b/d\ndeleted", "diff --git a/d/inner b/d/inner\nnew"}, false},
		{"dir to file", map[string]string{"d/a": "1\n", "d/sub/b": "2\n"}, map[string]string{"d": "now a file\n"}, false,
			[]string{"diff --git a/d b/d\nnew", "diff --git a/d/a b/d/a\ndeleted", "diff --git a/d/sub/b b/d/sub/b\ndeleted"}, false},
		{"dir to symlink", map[string]string{"d/a": "1\n"}, map[string]string{"d": "->elsewhere"}, false,
			[]string{"diff --git a/d b/d\nnew file mode 120000"}, false},
		{"odd names", map[string]string{"nl\nname": "a\n", "bad\xffutf8": "a\n", "sp ace": "a\n", "tab\tq\"b\\": "a\n", "new\\": ""},
			map[string]string{"nl\nname": "b\n", "bad\xffutf8": "b\n", "sp ace": "b\n", "tab\tq\"b\\": "b\n", "new\\": "c"}, false,
			[]string{`diff --git "a/nl\nname" "b/nl\nname"`, `"a/bad\377utf8"`, "diff --git a/sp ace b/sp ace\n", `"a/tab\tq\"b\134"`, `+++ "b/new\134"`}, false},
		{"text not utf8", map[string]string{"latin1": "caf\xe9\n"}, map[string]string{"latin1": "caf\xe9s\n"}, false,
			[]string{"-caf\xe9\n+caf\xe9s\n"}, false},
		{"binary named", map[string]string{"bin": "a\x00b"}, map[string]string{"bin": "a\x00c"}, false,
			[]string{"Binary files a/bin and b/bin differ\n"}, true},
		{"binary patch", map[string]string{"bin": "a\x00b", "gone.bin": "\x00\x01"}, map[string]string{"bin": "a\x00c", "new.bin": "\x00" + strings.Repeat("z", 200)}, true,
			[]string{"GIT binary patch\nliteral 3\n", "index 0000000000000000000000000000000000000000.."}, false},
		{"nul after 8000 bytes is text", map[string]string{"f": strings.Repeat("a", 8000) + "\x00\n"}, map[string]string{"f": strings.Repeat("a", 8000) + "\x00\nb\n"}, false,
			[]string{"+b\n"}, false},
		{"git dir skipped", map[string]string{".git/HEAD": "a\n", "sub/.git/x": "1"}, map[string]string{".git/HEAD": "b\n", "sub/.git/x": "2", "f": "c\n"}, false,
			[]string{"b/f\n"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
			os.Mkdir(a, 0o755)
			os.Mkdir(b, 0o755)
			writeTree(t, a, tc.old)
			writeTree(t, b, tc.new)
			out, sum, err := DiffTrees(a, b, DiffOptions{Binary: tc.binary})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("diff lacks %q:\n%s", w, out)
				}
			}
			if tc.name == "no change" && (len(out) != 0 || sum.Added+sum.Modified+sum.Deleted != 0) {
				t.Errorf("diff of equal trees: %q %+v", out, sum)
			}
			if !tc.noApply {
				roundTrip(t, a, out, snapOf(tc.new))
			}
		})
	}
}

func TestDiffSummary(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	writeTree(t, a, map[string]string{"mod": "1\n", "del": "x", "t": "file", "bin": "\x00"})
	writeTree(t, b, map[string]string{"mod": "2\n", "add": "y", "t": "->file", "bin": "\x00\x01"})
	_, sum, err := DiffTrees(a, b, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Added: 2, Modified: 2, Deleted: 2, Binary: 1}
	if sum.Added != want.Added || sum.Modified != want.Modified || sum.Deleted != want.Deleted || sum.Binary != want.Binary || len(sum.Omitted) != 0 || sum.Truncated {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
}

// A symlink in either tree is diffed as its target text: neither a file outside the
// tree nor a directory it points to is ever read.
func TestDiffNeverFollowsSymlinks(t *testing.T) {
	base := t.TempDir()
	secret := "SECRET-" + t.Name()
	writeTree(t, base, map[string]string{"outside/canary": secret, "outside/dir/file": secret})
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	canary := filepath.Join(base, "outside", "canary")
	writeTree(t, a, map[string]string{"l": "->" + canary, "d": "->../outside/dir"})
	writeTree(t, b, map[string]string{"l": "->" + canary + "2", "d": "->../outside", "new": "->" + canary, "nd": "->../outside/dir"})
	out, _, err := DiffTrees(a, b, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), secret) {
		t.Fatalf("diff read through a symlink:\n%s", out)
	}
	if !strings.Contains(string(out), "+"+canary+"2\n") || !strings.Contains(string(out), "diff --git a/nd b/nd\nnew file mode 120000") {
		t.Fatalf("symlinks not diffed as text:\n%s", out)
	}
}

// A symlinked root is a caller's choice and followed; a symlink swapped in for a
// directory between listing and descending is refused (ErrChanged), not followed.
func TestDiffRefusesSwappedEntry(t *testing.T) {
	base := t.TempDir()
	d := filepath.Join(base, "d")
	writeTree(t, d, map[string]string{"sub/f": "x"})
	root, err := openLayerRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	defer root.close()
	st, err := root.lstat("sub")
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(d, "sub"), filepath.Join(d, "moved"))
	os.Symlink("moved", filepath.Join(d, "sub"))
	if d, err := root.openDir("sub", &st); err == nil {
		d.close()
		t.Fatal("openDir followed a symlink swapped in for a directory")
	} else if !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("openDir through a swapped symlink: %v", err)
	}
	os.Remove(filepath.Join(d, "sub"))
	os.Mkdir(filepath.Join(d, "sub"), 0o755) // a different directory under the same name
	if _, err := root.openDir("sub", &st); !errors.Is(err, ErrChanged) {
		t.Fatalf("openDir of a replaced directory: %v", err)
	}
}

func TestDiffSpecialFiles(t *testing.T) {
	testenv.RequireRoot(t) // mknod of a character device
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	writeTree(t, a, map[string]string{"keep": "k\n"})
	writeTree(t, b, map[string]string{"keep": "k\n", "real": "r\n"})
	if err := syscall.Mkfifo(filepath.Join(b, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(b, "null"), syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
		t.Fatal(err)
	}
	// In a plain tree a 0/0 device is just a device, not a whiteout.
	if err := syscall.Mknod(filepath.Join(b, "keep2"), syscall.S_IFCHR|0o644, 0); err != nil {
		t.Fatal(err)
	}
	out, sum, err := DiffTrees(a, b, DiffOptions{}) // would block forever on opening the fifo
	if err != nil {
		t.Fatal(err)
	}
	var omitted []string
	for _, o := range sum.Omitted {
		omitted = append(omitted, o.Path)
	}
	if strings.Join(omitted, ",") != "fifo,keep2,null" || sum.Added != 1 {
		t.Fatalf("omitted %v, summary %+v", omitted, sum)
	}
	if !strings.Contains(string(out), "# agentbox: omitted fifo: not a regular file or symlink\n") {
		t.Fatalf("no marker:\n%s", out)
	}
	roundTrip(t, a, out, map[string]string{"keep": "file:k\n", "real": "file:r\n"})
}

func TestDiffLimits(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	big := strings.Repeat("0123456789abcdef\n", 1000) // 17000 bytes
	writeTree(t, a, map[string]string{"big": big, "bigsame": big, "bigexec": big, "small": "1\n"})
	writeTree(t, b, map[string]string{"big": big + "more\n", "bigsame": big, "bigexec": "x:" + big, "small": "2\n", "z1": "a\n", "z2": "b\n"})

	t.Run("per file", func(t *testing.T) {
		out, sum, err := DiffTrees(a, b, DiffOptions{MaxFileBytes: 10000})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Omitted) != 1 || sum.Omitted[0].Path != "big" || !strings.Contains(sum.Omitted[0].Reason, "10000") {
			t.Fatalf("omitted %+v", sum.Omitted)
		}
		if !strings.Contains(string(out), "diff --git a/bigexec b/bigexec\nold mode 100644\nnew mode 100755\n") {
			t.Fatalf("mode change of a big file with equal content lost:\n%s", out)
		}
		want := snapOf(map[string]string{"big": big, "bigsame": big, "bigexec": "x:" + big, "small": "2\n", "z1": "a\n", "z2": "b\n"})
		roundTrip(t, a, out, want) // everything but the omitted file
	})
	// The limits on the whole diff end it with a marker line, never with an error:
	// what the tree holds is the sandbox's choice, and a run must not become
	// agentbox's failure because of it (issue 10, item 7).
	t.Run("total", func(t *testing.T) {
		out, sum, err := DiffTrees(a, b, DiffOptions{MaxFileBytes: 100000, MaxTotalBytes: 100})
		if err != nil || !sum.Truncated {
			t.Fatalf("err %v, summary %+v", err, sum)
		}
		if !strings.HasPrefix(string(out), "# agentbox: diff truncated before big: limit of 100 bytes\n") {
			t.Fatalf("out:\n%s", out)
		}
		out, sum, err = DiffTrees(a, b, DiffOptions{MaxTotalBytes: 400, MaxFileBytes: 10})
		if err != nil || !sum.Truncated || sum.Modified+sum.Added == 0 || !strings.Contains(string(out), "# agentbox: diff truncated before ") {
			t.Fatalf("err %v summary %+v out:\n%s", err, sum, out)
		}
		// The files before the marker are whole: the partial diff applies.
		g := filepath.Join(t.TempDir(), "g")
		copyTree(t, a, g)
		if err := gitApply(g, out); err != nil {
			t.Fatalf("partial diff does not apply: %v\n%s", err, out)
		}
	})
	t.Run("omissions count against the total", func(t *testing.T) {
		_, sum, err := DiffTrees(a, b, DiffOptions{MaxFileBytes: 10, MaxTotalBytes: 60})
		if err != nil || !sum.Truncated || len(sum.Omitted) != 1 {
			t.Fatalf("err %v summary %+v", err, sum)
		}
	})
	t.Run("entries", func(t *testing.T) {
		out, sum, err := DiffTrees(a, b, DiffOptions{MaxEntries: 5})
		if err != nil || !sum.Truncated || !strings.Contains(string(out), "# agentbox: diff truncated before .: more than 5 directory entries\n") {
			t.Fatalf("err %v summary %+v out:\n%s", err, sum, out)
		}
	})
	t.Run("depth", func(t *testing.T) {
		deep := filepath.Join(base, "deep")
		p, rel := deep, ""
		for range maxDepth + 44 { // 300 levels
			p, rel = filepath.Join(p, "d"), filepath.Join(rel, "d")
		}
		writeTree(t, p, map[string]string{"f": "x"})
		atLimit := strings.Repeat("d/", maxDepth) + "g" // in the deepest directory compared
		writeTree(t, deep, map[string]string{"top": "t\n", "d/near": "n\n", atLimit: "g\n"})
		out, sum, err := DiffTrees(a, deep, DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cut := strings.Repeat("d/", maxDepth) + "d"
		if len(sum.Omitted) != 1 || sum.Omitted[0].Path != cut || sum.Truncated ||
			!strings.Contains(string(out), "# agentbox: omitted "+cut+": directory more than 256 levels deep: its contents are not compared\n") {
			t.Fatalf("summary %+v out:\n%.2000s", sum, out)
		}
		for _, want := range []string{"+++ b/top\n", "+++ b/d/near\n", "+++ b/" + atLimit + "\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the diff lacks %q", want)
			}
		}
		roundTrip(t, a, out, snapOf(map[string]string{"top": "t\n", "d/near": "n\n", atLimit: "g\n"}))
	})
	t.Run("path length", func(t *testing.T) {
		long := filepath.Join(base, "long")
		writeTree(t, long, map[string]string{"top": "t\n"})
		name := strings.Repeat("n", 255)
		r, err := os.OpenRoot(long)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 17 { // 17 * 256 > 4096: created one level at a time, below PATH_MAX
			if err := r.Mkdir(name, 0o755); err != nil {
				t.Fatal(err)
			}
			if i == 15 {
				if err := r.WriteFile("f", []byte("at 4080 bytes\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			next, err := r.OpenRoot(name)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			r = next
		}
		r.WriteFile("deepest", []byte("x"), 0o644)
		r.Close()
		out, sum, err := DiffTrees(a, long, DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Omitted) != 1 || len(sum.Omitted[0].Path) <= maxPathLen || sum.Omitted[0].Reason != "path longer than 4096 bytes" {
			t.Fatalf("summary %+v", sum)
		}
		if !strings.Contains(string(out), "+++ b/top\n") || !strings.Contains(string(out), "/f\n@@ -0,0 +1,1 @@\n+at 4080 bytes\n") {
			t.Fatalf("the paths that fit are not in the diff:\n%.3000s", out)
		}
	})
}

// Files come out in byte order of their whole paths, as git orders them ("a-b" <
// "a.txt" < "a/b" < "a0"), and the same trees always give the same bytes.
func TestDiffOrder(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	os.Mkdir(a, 0o755)
	files := map[string]string{"a0": "1", "a/b": "2", "a.txt": "3", "a-b": "4", "a/a/z": "5", "B": "6", "\xff": "7", "a/\n": "8"}
	writeTree(t, b, files)
	out, _, err := DiffTrees(a, b, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for l := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(l, "diff --git ") {
			got = append(got, l)
		}
	}
	want := []string{
		"diff --git a/B b/B",
		"diff --git a/a-b b/a-b",
		"diff --git a/a.txt b/a.txt",
		`diff --git "a/a/\n" "b/a/\n"`,
		"diff --git a/a/a/z b/a/a/z",
		"diff --git a/a/b b/a/b",
		"diff --git a/a0 b/a0",
		`diff --git "a/\377" "b/\377"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	again, _, _ := DiffTrees(a, b, DiffOptions{})
	if string(again) != string(out) {
		t.Fatal("not deterministic")
	}
}

func TestTruncated(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	writeTree(t, a, map[string]string{"f": "1\n"})
	writeTree(t, b, map[string]string{"f": "2\n", "g": "# agentbox: diff truncated before x\n", "# agentbox: diff truncated before y": ""})
	whole, _, err := DiffTrees(a, b, DiffOptions{})
	if err != nil || Truncated(whole) {
		t.Fatalf("a whole diff whose files imitate the marker counts as cut: %v\n%s", err, whole)
	}
	cut, sum, err := DiffTrees(a, b, DiffOptions{MaxTotalBytes: 200})
	if err != nil || !sum.Truncated || !Truncated(cut) {
		t.Fatalf("a cut diff does not count as cut: %v %+v\n%s", err, sum, cut)
	}
	if Truncated(nil) {
		t.Fatal("an empty diff counts as cut")
	}
}
