package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sweFix is a real git repository shaped like a SWE-bench instance's: history
// before the base commit, the gold fix and the tests after it, and the things an
// export must not carry (a later tag, a tag on the base, a side branch, a remote,
// a stash).
type sweFix struct {
	repos string // ImportOptions.Repos
	clone string // repos/acme__calc
	// Commits, oldest first on main.
	early, base, fix, later string
	feature, stash, baseTag string // a side branch's commit, the stash commit, an annotated tag object
	hiddenBlob, fixBlob     string // blobs that exist only after base
	gold, testPatch         string
	files                   map[string]string // the base tree
}

var sweFixture = sync.OnceValues(func() (*sweFix, error) {
	repos, err := os.MkdirTemp(suiteDir, "swe-repos-")
	if err != nil {
		return nil, err
	}
	f := &sweFix{repos: repos, clone: filepath.Join(repos, "acme__calc")}
	home := filepath.Join(repos, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	var gitErr error
	g := func(args ...string) string {
		if gitErr != nil {
			return ""
		}
		out, err := hostGit(home, f.clone, args...)
		gitErr = err
		return out
	}
	write := func(files map[string]string) {
		for name, data := range files {
			p := filepath.Join(f.clone, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil && gitErr == nil {
				gitErr = err
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil && gitErr == nil {
				gitErr = err
			}
		}
	}
	commit := func(msg string) string {
		g("add", "-A")
		g("commit", "-q", "-m", msg)
		return strings.TrimSpace(g("rev-parse", "HEAD"))
	}
	if err := os.MkdirAll(f.clone, 0o755); err != nil {
		return nil, err
	}
	g("init", "-q", "-b", "main")
	write(sweEarly)
	f.early = commit("calc: add and sub")
	write(sweBase)
	f.base = commit("calc: mul")
	g("tag", "-a", "-m", "release 1.0", "v1.0")
	f.baseTag = strings.TrimSpace(g("rev-parse", "v1.0"))
	f.files = maps.Clone(sweEarly)
	maps.Copy(f.files, sweBase)

	g("checkout", "-q", "-b", "feature", f.early)
	write(map[string]string{"secret.txt": "the answer is a + b\n"})
	f.feature = commit("feature: secret")
	g("checkout", "-q", "main")

	write(sweFixFiles)
	f.fix = commit("calc: add adds")
	write(sweLater)
	f.later = commit("tests: add")
	g("tag", "v2.0")
	g("remote", "add", "origin", "https://example.invalid/acme/calc.git")
	write(map[string]string{"README": "calc, work in progress\n"})
	g("stash", "-q")
	f.stash = strings.TrimSpace(g("rev-parse", "stash@{0}"))
	f.hiddenBlob = strings.TrimSpace(g("rev-parse", f.later+":tests/test_calc_hidden.py"))
	f.fixBlob = strings.TrimSpace(g("rev-parse", f.fix+":calc.py"))
	f.gold = g("diff", f.base, f.fix)
	f.testPatch = g("diff", f.fix, f.later, "--", "tests")
	return f, gitErr
})

// hostGit runs git for the tests, isolated from the host's configuration.
func hostGit(home, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
		"GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=C O Mitter", "GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func sweFixt(t *testing.T) *sweFix {
	t.Helper()
	needTools(t, Python)
	f, err := sweFixture()
	if err != nil {
		t.Fatalf("build the SWE-bench fixture: %v", err)
	}
	return f
}

// row returns a valid SWE-bench row for the fixture, as a map to mutate.
func (f *sweFix) row() map[string]any {
	return map[string]any{
		"instance_id":              "acme__calc-1",
		"repo":                     "acme/calc",
		"base_commit":              f.base,
		"problem_statement":        "calc.add subtracts\n\nadd(2, 3) returns -1; it should return 5.\r\nTabs\tand trailing spaces   \nstay: ünïcode ✓\n",
		"patch":                    f.gold,
		"test_patch":               f.testPatch,
		"FAIL_TO_PASS":             []string{"tests/test_calc.py::CalcTest::test_add", "tests/test_calc_hidden.py::AddTest::test_commutative"},
		"PASS_TO_PASS":             []string{"tests/test_calc.py::CalcTest::test_sub", "tests/test_calc_hidden.py::AddTest::test_zero"},
		"hints_text":               "see the comment on line 4",
		"version":                  "1.0",
		"created_at":               "2020-01-02T03:04:05Z",
		"environment_setup_commit": f.early, // kept in the metadata
	}
}

func jsonl(t *testing.T, rows ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

var sweEarly = map[string]string{
	"calc.py": `"""A tiny calculator."""


def add(a, b):
    return a - b


def sub(a, b):
    return a - b
`,
	"tests/__init__.py": "",
	"tests/test_calc.py": `import unittest

from calc import sub


class CalcTest(unittest.TestCase):
    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)
`,
	"README": "calc\n",
}

var sweBase = map[string]string{
	"calc.py": `"""A tiny calculator."""


def add(a, b):
    return a - b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b
`,
	"README": "calc: add, sub, mul\n",
}

var sweFixFiles = map[string]string{
	"calc.py": strings.Replace(sweBase["calc.py"], "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b", 1),
}

var sweLater = map[string]string{
	"tests/test_calc.py": `import unittest

from calc import add, sub


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)
`,
	"tests/test_calc_hidden.py": `import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_commutative(self):
        for a, b in [(1, 2), (5, -3), (0, 7)]:
            self.assertEqual(add(a, b), add(b, a))

    def test_zero(self):
        self.assertEqual(add(4, 0), 4)
`,
}
