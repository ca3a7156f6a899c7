package task

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func taskWithGlobs(t *testing.T, globs ...string) *Task {
	t.Helper()
	tk := &Task{}
	for _, g := range globs {
		p, err := compileGlob(g)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", g, err)
		}
		tk.protected = append(tk.protected, p)
	}
	return tk
}

func TestGlobMatching(t *testing.T) {
	tests := []struct {
		glob string
		path string
		want bool
	}{
		// Unanchored: a name at any depth, and everything below it.
		{"conftest.py", "conftest.py", true},
		{"conftest.py", "src/pkg/conftest.py", true},
		{"conftest.py", "conftest.pyc", false},
		{"conftest.py", "myconftest.py", false},
		{"*_test.go", "a/b/c_test.go", true},
		{"*_test.go", "a/b/c_test.go.orig", false},
		{"testdata", "pkg/testdata/new/file.json", true},
		{"testdata", "pkg/testdata", true},
		{"testdata", "pkg/testdatax/file", false},
		{"testdata/", "pkg/testdata/x", true},
		{".git", ".git/hooks/pre-commit", true},
		{".git", "sub/.git/config", true},
		{".git", ".github/x", false},
		{"*.pth", "lib/evil.pth", true},
		{"__pycache__", "pkg/__pycache__/mod.cpython-311.pyc", true},
		// Anchored: a slash anywhere but the end ties the glob to the root.
		{"tests/test_billing.py", "tests/test_billing.py", true},
		{"tests/test_billing.py", "sub/tests/test_billing.py", false},
		{"/go.mod", "go.mod", true},
		{"/go.mod", "sub/go.mod", false},
		{"docs/**", "docs", true},
		{"docs/**", "docs/a/b/c.md", true},
		{"docs/**", "src/docs/a", false},
		{"**/gen/*.py", "gen/x.py", true},
		{"**/gen/*.py", "a/b/gen/x.py", true},
		{"**/gen/*.py", "a/b/gen/sub/x.py", false},
		{"**/gen/*.py", "gen/x.py/inside", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b/z", true},
		{"a/**/b", "a/x/y/c", false},
		{"src/*.py", "src/x.py", true},
		{"src/*.py", "src/sub/x.py", false},
		{"src/?.py", "src/x.py", true},
		{"src/[ab].py", "src/c.py", false},
		{`/weird\[1\].py`, "weird[1].py", true},
		{`/weird\[1\].py`, "weird1.py", false},
	}
	for _, tc := range tests {
		tk := taskWithGlobs(t, tc.glob)
		if got := tk.Protected(tc.path); got != tc.want {
			t.Errorf("glob %q, Protected(%q) = %v, want %v", tc.glob, tc.path, got, tc.want)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	for _, g := range []string{"", "/", "a//b", "a/../b", "./a", "a**", "**x/y", "[", "a/[b", "\x00"} {
		if _, err := compileGlob(g); err == nil {
			t.Errorf("compileGlob(%q) accepted a malformed glob", g)
		}
	}
}

// TestProtectedBuiltin checks the defaults and the task's own globs on real tasks,
// including paths an agent's patch would use to get around them.
func TestProtectedBuiltin(t *testing.T) {
	c01 := builtinTask(t, "C01")
	g01 := builtinTask(t, "G01")
	tests := []struct {
		tk   *Task
		path string
		want bool
	}{
		{c01, "billing.py", false},
		{c01, "helpers/money.py", false},
		{c01, "random.py", false}, // allowed: the judge never imports the repository, its worker puts it last
		{c01, "tests/test_billing.py", true},
		{c01, "tests/test_new.py", true},
		{c01, "tests/helpers/util.py", true},
		{c01, "tests", true},
		{c01, "test_extra.py", true},
		{c01, "pkg/extra_test.py", true},
		{c01, "agentbox_judge.py", true},
		{c01, "sub/agentbox_judge.py", false},
		{c01, "judge_billing.py", true},
		{c01, "conftest.py", true},
		{c01, "sub/dir/conftest.py", true},
		{c01, "sitecustomize.py", true},
		{c01, "usercustomize.py", true},
		{c01, "evil.pth", true},
		{c01, "__pycache__/billing.cpython-311.pyc", true},
		{c01, "billing.pyc", true},
		{c01, "billing.cpython-311-x86_64-linux-gnu.so", true},
		{c01, "pyproject.toml", true},
		{c01, "setup.cfg", true},
		{c01, ".git/hooks/pre-commit", true},
		{c01, ".gitattributes", true},
		{c01, ".github/workflows/ci.yml", true},
		{c01, ".agentbox/results.xml", true},
		// Spellings that normalise to a protected path.
		{c01, "./tests/test_billing.py", true},
		{c01, "tests//test_billing.py", true},
		{c01, "billing.py/../tests/x.py", true},
		{c01, "tests/../billing.py", false},
		// Names that are never a repository path.
		{c01, "", true},
		{c01, ".", true},
		{c01, "..", true},
		{c01, "../outside.py", true},
		{c01, "/etc/passwd", true},
		{c01, "bill\x00ing.py", true},
		{g01, "retry.go", false},
		{g01, "internal/backoff.go", false},
		{g01, "retry_test.go", true},
		{g01, "judge_retry.py", true},
		{g01, "agentbox_worker/main.go", true},
		{g01, "go.mod", true},
		{g01, "go.sum", true},
		{g01, "sub/go.mod", true},
		{g01, "go.work", true},
		{g01, "vendor/modules.txt", true},
		{g01, "blob_amd64.syso", true},
		{g01, "testdata/golden.json", true},
	}
	for _, tc := range tests {
		if got := tc.tk.Protected(tc.path); got != tc.want {
			t.Errorf("%s: Protected(%q) = %v, want %v", tc.tk.ID, tc.path, got, tc.want)
		}
	}
}

// TestProtectedLinearTime guards against globs with many "**" taking exponential
// time on deep paths an agent chose. It bounds the CPU time the process spends
// (no parallel test runs meanwhile), which a loaded machine does not stretch.
func TestProtectedLinearTime(t *testing.T) {
	tk := taskWithGlobs(t, "**/a/**/a/**/a/**/a/**/a/**/a/**/b")
	deep := strings.Repeat("a/", 2000) + "c"
	start := cpuTime(t)
	if tk.Protected(deep) {
		t.Fatal("matched a path without b")
	}
	if d := cpuTime(t) - start; d > 2*time.Second {
		t.Fatalf("Protected took %v of CPU on a 2,000-segment path", d)
	}
}

// cpuTime is the CPU time (user and system) the test process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
