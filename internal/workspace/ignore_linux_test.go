package workspace

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentbox/agentbox/internal/testenv"
)

// addedPaths lists the files a diff adds.
func addedPaths(diff []byte) []string {
	var out []string
	for _, l := range strings.Split(string(diff), "\n") {
		if rest, ok := strings.CutPrefix(l, "diff --git a/"); ok {
			out = append(out, rest[:strings.Index(rest, " b/")])
		}
	}
	slices.Sort(out)
	return out
}

// TestIgnoreMatchesGit: the files a diff of a new tree adds are those git reports
// untracked and not ignored (git ls-files --others --exclude-standard), for nested
// .gitignore files exercising anchoring, directory-only patterns, negation, "**",
// escapes, and a re-include under an excluded directory (which git refuses). The
// default patterns are given to git as its core.excludesFile, the lowest
// precedence, as the diff applies them.
func TestIgnoreMatchesGit(t *testing.T) {
	_, err := exec.LookPath("git")
	testenv.Require(t, err == nil, "git, for the reference gitignore semantics") // .ci/run installs it
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	files := map[string]string{
		".gitignore": "# comment\n*.log\n!keep.log\n/build/\ndocs/*.html\n**/gen/**\nnode_modules\n\\#hash\ntrail   \nspace\\ \n" +
			"/*.tmp\ncache/\n!cache/want.txt\n{braces}\n*.pyc\n!important.pyc\n",
		"a.log": "x", "keep.log": "x", "sub/b.log": "x", "sub/keep.log": "x",
		"build/out": "x", "sub/build/out": "x", // anchored: only the root's build/
		"docs/i.html": "x", "docs/deep/i.html": "x", "docs/i.txt": "x",
		"x/gen/y/z.go": "x", "gen/top.go": "x",
		"node_modules/p/index.js": "x", "sub/node_modules": "x", // a file named like an ignored dir
		"#hash": "x", "trail": "x", "space ": "x", "r.tmp": "x", "sub/r.tmp": "x",
		"cache/want.txt": "x", "cache/other": "x", "{braces}": "x", "braces": "x",
		"m/__pycache__/m.cpython-311.pyc": "x", "m/m.pyc": "x", "m/important.pyc": "x",
		".pytest_cache/v/cache/lastfailed": "x", "m/.pytest_cache": "x", // a file: the pattern is directory-only
		"src/.gitignore": "*.out\n!/keep.out\nlocal/\n/anch\n",
		"src/a.out":      "x", "src/keep.out": "x", "src/deep/keep.out": "x", "src/local/f": "x", "local/f": "x",
		"src/anch": "x", "src/deep/anch": "x", "src/main.c": "x", "README": "x",
	}
	writeTree(t, tree, files)
	excludes := filepath.Join(dir, "excludes")
	os.WriteFile(excludes, []byte(strings.Join(DefaultIgnore, "\n")+"\n"), 0o644)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "core.excludesFile=" + excludes}, args...)...)
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	want := strings.Fields(git("-c", "core.quotePath=false", "ls-files", "--others", "--exclude-standard"))
	slices.Sort(want)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	diff, sum, err := DiffTrees(empty, tree, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := addedPaths(diff)
	if !slices.Equal(got, want) {
		t.Fatalf("diff adds\n  %q\ngit's untracked, not ignored:\n  %q", got, want)
	}
	t.Logf("%d of %d files diffed: %q", len(got), len(files), got)
	if sum.Ignored == 0 {
		t.Fatal("Summary.Ignored not counted")
	}
	// IncludeIgnored diffs them all.
	diff, _, err = DiffTrees(empty, tree, DiffOptions{IncludeIgnored: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := addedPaths(diff); len(got) != len(files) {
		t.Fatalf("IncludeIgnored: %d files, want %d", len(got), len(files))
	}
}

// TestIgnoreKeepsTrackedChanges: a pattern never hides a change to what the old
// tree holds (git diffs tracked files whatever .gitignore says), so a sandbox cannot
// hide an edit to an existing file, a deletion or a test's tampering behind a
// .gitignore it writes; only new files are left out.
func TestIgnoreKeepsTrackedChanges(t *testing.T) {
	dir := t.TempDir()
	old, cur := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	writeTree(t, old, map[string]string{"calc.py": "a\n", "tests/test_calc.py": "t\n", "gone.pyc": "p", "__pycache__/keep.pyc": "k"})
	writeTree(t, cur, map[string]string{
		"calc.py": "b\n", "tests/test_calc.py": "T\n", "__pycache__/keep.pyc": "K", // modified, all ignored by a pattern
		".gitignore": "*.py\ntests/\n*\n", "new.py": "n\n", "tests/new_test.py": "n\n", "__pycache__/calc.pyc": "c",
	})
	diff, _, err := DiffTrees(old, cur, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := addedPaths(diff)
	want := []string{"__pycache__/keep.pyc", "calc.py", "gone.pyc", "tests/test_calc.py"}
	if !slices.Equal(got, want) {
		t.Fatalf("diff of %q, want %q:\n%s", got, want, diff)
	}
}

// TestIgnorePropertyMatchesGit: for random trees and random .gitignore files (at the
// root and in a subdirectory) built from git's pattern syntax, the diff adds
// exactly the files git lists as untracked and not ignored.
func TestIgnorePropertyMatchesGit(t *testing.T) {
	testenv.SkipShort(t, "runs git 100 times (~15 s)")
	_, err := exec.LookPath("git")
	testenv.Require(t, err == nil, "git, for the reference gitignore semantics")
	names := []string{"a", "b", "c.pyc", "d.log", "e.txt", "__pycache__", "build", "gen"}
	pieces := []string{"a", "b", "*.log", "*.txt", "!e.txt", "!d.log", "build/", "/build", "gen/**", "**/b", "a/b", "/a/*",
		"!a", "?.txt", "[ab]", "!*.pyc", "b/", "!build/", "*", "!gen/", "e.*", "a/**/e.txt", "\\!a", "!/a"}
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		tree := filepath.Join(dir, "tree")
		files := map[string]string{}
		n := rapid.IntRange(1, 12).Draw(rt, "files")
		for i := 0; i < n; i++ {
			depth := rapid.IntRange(1, 3).Draw(rt, "depth")
			var parts []string
			for j := 0; j < depth; j++ {
				parts = append(parts, rapid.SampledFrom(names).Draw(rt, "name"))
			}
			p := strings.Join(parts, "/")
			clash := false
			for q := range files { // a file cannot also be a directory
				if strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
					clash = true
				}
			}
			if !clash {
				files[p] = "x"
			}
		}
		gi := func(label string) string {
			return strings.Join(rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 5).Draw(rt, label), "\n") + "\n"
		}
		files[".gitignore"] = gi("root")
		if _, ok := files["a"]; !ok && rapid.Bool().Draw(rt, "nested") {
			files["a/.gitignore"] = gi("nested")
		}
		writeTree(rt, tree, files)
		excludes := filepath.Join(dir, "excludes")
		os.WriteFile(excludes, []byte(strings.Join(DefaultIgnore, "\n")+"\n"), 0o644)
		cmd := exec.Command("sh", "-c", "git init -q && git -c core.excludesFile="+excludes+" ls-files --others --exclude-standard")
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			rt.Fatalf("git: %v\n%s", err, out)
		}
		want := strings.Fields(string(out))
		slices.Sort(want)
		empty := filepath.Join(dir, "empty")
		os.Mkdir(empty, 0o755)
		diff, _, err := DiffTrees(empty, tree, DiffOptions{})
		if err != nil {
			rt.Fatal(err)
		}
		if got := addedPaths(diff); !slices.Equal(got, want) {
			rt.Fatalf("files %q\n.gitignore %q, a/.gitignore %q\ndiff adds %q\ngit: %q", slices.Sorted(maps.Keys(files)), files[".gitignore"], files["a/.gitignore"], got, want)
		}
	})
}
