package task

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadValid(t *testing.T) {
	dir := writeFixture(t)
	before := testenv.TreeHash(t, dir)
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	want := &Task{
		ID:                "fix-1.0",
		Title:             "add subtracts",
		Statement:         "calc.add returns a - b; make it return a + b. Edit calc.py only.\n",
		Language:          Python,
		Dir:               real,
		Repo:              filepath.Join(real, "repo"),
		Hidden:            filepath.Join(real, "hidden"),
		HiddenFiles:       []string{"agentbox_unittest.py", "tests/test_calc_hidden.py"},
		PublicTests:       []string{"tests/test_calc.py"},
		ProtectedGlobs:    append(DefaultProtected(), "tests/test_calc.py", "docs/**", "/agentbox_unittest.py", "/tests/test_calc_hidden.py"),
		TestCommand:       []string{"python3", "-I", "-S", "-B", "agentbox_unittest.py", "tests"},
		PublicTestCommand: []string{"python3", "-B", "-m", "unittest", "-v"},
		ResultFormat:      JUnit,
		FailToPass:        []string{"tests/test_calc.py::CalcTest::test_add", "tests/test_calc_hidden.py::HiddenTest::test_commutative"},
		PassToPass:        []string{"tests/test_calc.py::CalcTest::test_sub"},
		Limits:            Limits{Timeout: 90 * time.Second, Memory: 256 << 20, Pids: 32},
		Reference:         filepath.Join(real, "solution.patch"),
		Metadata:          map[string]any{"difficulty": "trivial", "tags": []any{"arith", "demo"}},
		Witnessed:         true, // hidden/agentbox_unittest.py
	}
	if diff := cmp.Diff(want, tk, cmpopts.IgnoreUnexported(Task{})); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	if after := testenv.TreeHash(t, dir); after != before {
		t.Error("Load modified the task directory")
	}
}

// TestLoadNetwork: task.yaml's network becomes the policy setup gets.
func TestLoadNetwork(t *testing.T) {
	dir := writeFixture(t)
	writeYAML(t, dir, strings.Replace(fixtureYAML, "result_format:", "setup: [pip, download, -d, /tmp, x]\n"+
		"network: {allow: [preset:pypi, Mirror.Internal.], allow_private: [10.1.0.0/16], dns_override: {mirror.internal: 10.1.2.3}}\nresult_format:", 1))
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := tk.Network
	if n == nil || strings.Join(n.Allow, " ") != "preset:pypi Mirror.Internal." || n.AllowPrivate[0].String() != "10.1.0.0/16" ||
		n.DNSOverride["mirror.internal"].String() != "10.1.2.3" {
		t.Errorf("Network = %+v", n)
	}
}

func TestLoadDefaults(t *testing.T) {
	dir := writeFixture(t)
	yaml := fixtureYAML[:strings.Index(fixtureYAML, "limits:")] + "reference: solution.patch\n"
	yaml = strings.Replace(yaml, "hidden_tests: hidden\n", "", 1)
	writeYAML(t, dir, yaml)
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Limits{DefaultTimeout, DefaultMemory, DefaultPids}); tk.Limits != want {
		t.Errorf("Limits = %+v, want %+v", tk.Limits, want)
	}
	if filepath.Base(tk.Hidden) != "hidden" {
		t.Errorf("Hidden = %s, want the default hidden/", tk.Hidden)
	}
}

func TestLoadErrors(t *testing.T) {
	set := func(old, new string) func(string) string {
		return func(y string) string {
			if !strings.Contains(y, old) {
				panic("fixture has no " + old)
			}
			return strings.Replace(y, old, new, 1)
		}
	}
	tests := []struct {
		name  string
		yaml  func(string) string
		fs    func(t *testing.T, dir string)
		file  string // suffix of Error.File
		field string
		msg   string
	}{
		{name: "unknown field", yaml: set("title:", "tittle: x\ntitle:"), file: "task.yaml", msg: "field tittle not found"},
		{name: "duplicate key", yaml: set("title:", "title: x\ntitle:"), file: "task.yaml", msg: "already defined"},
		{name: "two documents", yaml: func(y string) string { return y + "---\nid: x\n" }, file: "task.yaml", msg: "more than one YAML document"},
		{name: "empty file", yaml: func(string) string { return "" }, file: "task.yaml", msg: "empty file"},
		{name: "not a mapping", yaml: func(string) string { return "- a\n" }, file: "task.yaml", msg: "cannot unmarshal"},
		{name: "invalid UTF-8", yaml: set("add subtracts", "add \xff"), file: "task.yaml", msg: "UTF-8"},
		{name: "id missing", yaml: set("id: fix-1.0\n", ""), field: "id", msg: "missing"},
		{name: "id with slash", yaml: set("id: fix-1.0", "id: a/b"), field: "id", msg: "use only"},
		{name: "id dots", yaml: set("id: fix-1.0", "id: '..'"), field: "id", msg: "use only"},
		{name: "id too long", yaml: set("id: fix-1.0", "id: "+strings.Repeat("x", 65)), field: "id", msg: "longer"},
		{name: "title two lines", yaml: set("title: add subtracts", "title: \"a\\nb\""), field: "title", msg: "one line"},
		{name: "title missing", yaml: set("title: add subtracts\n", ""), field: "title", msg: "missing"},
		{name: "statement blank", yaml: set("  calc.add returns a - b; make it return a + b. Edit calc.py only.\n", "  \n"), field: "statement", msg: "missing"},
		{name: "statement NUL", yaml: set("statement: |\n  calc.add returns a - b; make it return a + b. Edit calc.py only.\n", "statement: \"a\\0b\"\n"), field: "statement", msg: "NUL"},
		{name: "language unknown", yaml: set("language: python", "language: rust"), field: "language", msg: "unknown language"},
		{name: "language missing", yaml: set("language: python\n", ""), field: "language", msg: "missing"},
		{name: "format unknown", yaml: set("result_format: junit", "result_format: xml"), field: "result_format", msg: "unknown format"},
		{name: "go-test-json for python", yaml: set("result_format: junit", "result_format: go-test-json"), field: "result_format", msg: "needs language go"},
		{name: "test_command missing", yaml: set("test_command: [python3, -I, -S, -B, agentbox_unittest.py, tests]\n", ""), field: "test_command", msg: "missing"},
		{name: "test_command empty program", yaml: set("test_command: [python3,", "test_command: ['',"), field: "test_command", msg: "empty program"},
		{name: "test_command a string", yaml: set("test_command: [python3, -I, -S, -B, agentbox_unittest.py, tests]", "test_command: python3 -m unittest"), file: "task.yaml", msg: "cannot unmarshal"},
		{name: "setup empty program", yaml: set("result_format:", "setup: ['']\nresult_format:"), field: "setup", msg: "empty program"},
		{name: "network without setup", yaml: set("result_format:", "network: {allow: [pypi.org]}\nresult_format:"), field: "network", msg: "there is no setup"},
		{name: "network allow everything", yaml: set("result_format:", "setup: [pip, download]\nnetwork: {allow: ['*']}\nresult_format:"), field: "network", msg: "allow"},
		{name: "network bad prefix", yaml: set("result_format:", "setup: [pip, download]\nnetwork: {allow: [pypi.org], allow_private: [10.1.2.3]}\nresult_format:"), field: "network", msg: "CIDR"},
		{name: "network bad pin", yaml: set("result_format:", "setup: [pip, download]\nnetwork: {allow: [pypi.org], dns_override: {pypi.org: pypi}}\nresult_format:"), field: "network", msg: "not an IP"},
		{name: "network secrets", yaml: set("result_format:", "setup: [pip, download]\nnetwork: {allow: [pypi.org], secrets: [x]}\nresult_format:"), file: "task.yaml", msg: "field secrets not found"},
		{name: "fail_to_pass missing", yaml: set("fail_to_pass:\n  - tests/test_calc.py::CalcTest::test_add\n  - tests/test_calc_hidden.py::HiddenTest::test_commutative\n", ""), field: "fail_to_pass", msg: "missing"},
		{name: "id in both lists", yaml: set("  - tests/test_calc.py::CalcTest::test_sub", "  - tests/test_calc.py::CalcTest::test_add"), field: "pass_to_pass[0]", msg: "already listed"},
		{name: "junit id without file", yaml: set("  - tests/test_calc.py::CalcTest::test_sub", "  - test_sub"), field: "pass_to_pass[0]", msg: "use a pytest node id"},
		{name: "junit id escaping", yaml: set("  - tests/test_calc.py::CalcTest::test_sub", "  - ../x.py::T::t"), field: "pass_to_pass[0]", msg: "FILE::NAME"},
		{name: "junit id empty part", yaml: set("  - tests/test_calc.py::CalcTest::test_sub", "  - tests/x.py::::t"), field: "pass_to_pass[0]", msg: "empty part"},
		{name: "id with trailing space", yaml: set("  - tests/test_calc.py::CalcTest::test_sub", "  - 'tests/test_calc.py::CalcTest::test_sub '"), field: "pass_to_pass[0]", msg: "trailing space"},
		{name: "id with newline", yaml: set("  - tests/test_calc.py::CalcTest::test_sub", "  - \"tests/t.py::a\\nb\""), field: "pass_to_pass[0]", msg: "control character"},
		{name: "exit-code with other ids", yaml: set("result_format: junit", "result_format: exit-code"), field: "fail_to_pass", msg: "exactly one test id"},
		{name: "timeout negative", yaml: set("timeout: 90s", "timeout: -1s"), field: "limits.timeout", msg: "positive duration"},
		{name: "timeout a number", yaml: set("timeout: 90s", "timeout: 90"), field: "limits.timeout", msg: "positive duration"},
		{name: "timeout too long", yaml: set("timeout: 90s", "timeout: 25h"), field: "limits.timeout", msg: "up to 24h"},
		{name: "memory words", yaml: set("memory: 256M", "memory: lots"), field: "limits.memory", msg: "size"},
		{name: "memory tiny", yaml: set("memory: 256M", "memory: 1K"), field: "limits.memory", msg: "at least 1M"},
		{name: "pids float", yaml: set("pids: 32", "pids: 1.5"), field: "limits.pids", msg: "whole number"},
		{name: "pids zero", yaml: set("pids: 32", "pids: 0"), field: "limits.pids", msg: "at least 1"},
		{name: "limits unknown", yaml: set("pids: 32", "pids: 32\n  cpus: 2"), file: "task.yaml", msg: "field cpus not found"},
		{name: "public glob malformed", yaml: set("  - tests/test_calc.py\nhidden", "  - 'tests/[a'\nhidden"), field: "public_tests[0]", msg: "syntax error"},
		{name: "public glob matches nothing", yaml: set("  - tests/test_calc.py\nhidden", "  - tests/test_nothing.py\nhidden"), field: "public_tests[0]", msg: "matches no file"},
		{name: "protected glob partial **", yaml: set("  - docs/**", "  - docs/a**"), field: "protected[0]", msg: "whole path segment"},
		{name: "protected glob dotdot", yaml: set("  - docs/**", "  - ../x"), field: "protected[0]", msg: `".." segment`},
		{name: "hidden escapes", yaml: set("hidden_tests: hidden", "hidden_tests: ../hidden"), field: "hidden_tests", msg: "inside the task directory"},
		{name: "hidden absolute", yaml: set("hidden_tests: hidden", "hidden_tests: /tmp"), field: "hidden_tests", msg: "inside the task directory"},
		{name: "hidden empty string", yaml: set("hidden_tests: hidden", "hidden_tests: ''"), field: "hidden_tests", msg: "inside the task directory"},
		{name: "hidden is repo", yaml: set("hidden_tests: hidden", "hidden_tests: repo/tests"), field: "hidden_tests", msg: "overlap repo/"},
		{name: "hidden is the task dir", yaml: set("hidden_tests: hidden", "hidden_tests: ."), field: "hidden_tests", msg: "overlap repo/"},
		{name: "hidden missing", yaml: set("hidden_tests: hidden", "hidden_tests: secret"), field: "hidden_tests", msg: "no such file"},
		{name: "hidden empty", fs: func(t *testing.T, dir string) {
			removeAll(t, filepath.Join(dir, "hidden"))
			mkdir(t, filepath.Join(dir, "hidden", "tests"))
		}, file: "hidden", msg: "no files"},
		{name: "hidden through a symlink", yaml: set("hidden_tests: hidden", "hidden_tests: alias"), fs: func(t *testing.T, dir string) {
			symlink(t, "hidden", filepath.Join(dir, "alias"))
		}, field: "hidden_tests", msg: "goes through a symlink"},
		{name: "hidden symlink into repo", fs: func(t *testing.T, dir string) {
			symlink(t, "../repo/calc.py", filepath.Join(dir, "hidden", "calc.py"))
		}, file: "hidden/calc.py", msg: "leaves hidden"},
		{name: "hidden file over a repo dir", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "hidden", "docs"), "x")
		}, file: "hidden/docs", msg: "where repo/ has a directory"},
		{name: "hidden dir over a repo file", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "hidden", "calc.py", "x"), "x")
		}, file: "hidden/calc.py", msg: "where repo/ has a file"},
		{name: "reference missing", yaml: set("reference: solution.patch\n", ""), field: "reference", msg: "missing"},
		{name: "reference escapes", yaml: set("reference: solution.patch", "reference: ../solution.patch"), field: "reference", msg: "inside the task directory"},
		{name: "reference in repo", yaml: set("reference: solution.patch", "reference: repo/calc.py"), field: "reference", msg: "agent would see the solution"},
		{name: "reference in hidden", yaml: set("reference: solution.patch", "reference: hidden/agentbox_unittest.py"), field: "reference", msg: "copied into the repository"},
		{name: "reference not a diff", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), "just words\n")
		}, file: "solution.patch", msg: "no file changes"},
		{name: "reference is a symlink", fs: func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "solution.patch"), filepath.Join(dir, "real.patch"))
			symlink(t, "real.patch", filepath.Join(dir, "solution.patch"))
		}, field: "reference", msg: "goes through a symlink"},
		{name: "reference touches a test", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), strings.ReplaceAll(fixturePatch, "calc.py", "tests/test_calc.py"))
		}, file: "solution.patch", msg: `protected path "tests/test_calc.py"`},
		{name: "reference touches a protected glob", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), "diff --git a/docs/new.txt b/docs/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/docs/new.txt\n@@ -0,0 +1 @@\n+x\n")
		}, file: "solution.patch", msg: `protected path "docs/new.txt"`},
		{name: "reference does not apply", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), strings.Replace(fixturePatch, "-    return a - b", "-    return a * b", 1))
		}, file: "solution.patch", msg: "does not apply to repo/calc.py"},
		{name: "reference changes a missing file", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), strings.ReplaceAll(fixturePatch, "calc.py", "other.py"))
		}, file: "solution.patch", msg: "which repo/ does not have"},
		{name: "reference creates an existing file", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), "diff --git a/calc.py b/calc.py\nnew file mode 100644\n--- /dev/null\n+++ b/calc.py\n@@ -0,0 +1 @@\n+x\n")
		}, file: "solution.patch", msg: "already has"},
		{name: "reference escapes the repo", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "solution.patch"), "--- a/../task.yaml\n+++ b/../task.yaml\n@@ -1 +1 @@\n-id: fix-1.0\n+id: x\n")
		}, file: "solution.patch", msg: "not a clean path"},
		{name: "repo missing", fs: func(t *testing.T, dir string) {
			removeAll(t, filepath.Join(dir, "repo"))
		}, file: "repo", msg: "a task needs repo/"},
		{name: "repo is a symlink", fs: func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "repo"), filepath.Join(dir, "code"))
			symlink(t, "code", filepath.Join(dir, "repo"))
		}, file: "repo", msg: "not a directory"},
		{name: "repo with nested git history", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "repo", "docs", ".git", "HEAD"), "ref: refs/heads/main\n")
		}, file: "repo/docs/.git", msg: "only as a directory named .git at the root"},
		{name: "repo with a .git file", fs: func(t *testing.T, dir string) {
			// A gitfile ("gitdir: /elsewhere") would point git outside the task.
			writeFile(t, filepath.Join(dir, "repo", ".git"), "gitdir: /tmp/elsewhere\n")
		}, file: "repo/.git", msg: "must be a directory"},
		{name: "repo with a .git symlink", fs: func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "repo", "docs", "g"))
			symlink(t, "docs/g", filepath.Join(dir, "repo", ".git"))
		}, file: "repo/.git", msg: "must be a directory"},
		{name: "repo with .GIT", fs: func(t *testing.T, dir string) {
			// On a case-insensitive file system this is git's directory.
			writeFile(t, filepath.Join(dir, "repo", ".GIT", "HEAD"), "ref: refs/heads/main\n")
		}, file: "repo/.GIT", msg: "only as a directory named .git at the root"},
		{name: "repo .git with an escaping symlink", fs: func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "repo", ".git"))
			symlink(t, "../../solution.patch", filepath.Join(dir, "repo", ".git", "config"))
		}, file: "repo/.git/config", msg: "leaves repo"},
		{name: "hidden with git history", fs: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "hidden", ".git", "HEAD"), "ref: refs/heads/main\n")
		}, file: "hidden/.git", msg: "must not carry git history"},
		{name: "public_test_command empty list", yaml: set("result_format:", "public_test_command: []\nresult_format:"), field: "public_test_command", msg: "missing or empty program"},
		{name: "public_test_command empty program", yaml: set("result_format:", "public_test_command: ['', x]\nresult_format:"), field: "public_test_command", msg: "missing or empty program"},
		{name: "public_test_command NUL", yaml: set("result_format:", "public_test_command: [python3, \"a\\0b\"]\nresult_format:"), field: "public_test_command", msg: "NUL byte"},
		{name: "public_test_command a string", yaml: set("result_format:", "public_test_command: python3 -m unittest\nresult_format:"), file: "task.yaml", msg: "cannot unmarshal"},
		{name: "repo symlink out of the task", fs: func(t *testing.T, dir string) {
			symlink(t, "../../../../etc/passwd", filepath.Join(dir, "repo", "docs", "passwd"))
		}, file: "repo/docs/passwd", msg: "leaves repo"},
		{name: "repo symlink absolute", fs: func(t *testing.T, dir string) {
			symlink(t, filepath.Join(dir, "repo", "calc.py"), filepath.Join(dir, "repo", "abs.py"))
		}, file: "repo/abs.py", msg: "absolute path"},
		{name: "repo symlink dangling", fs: func(t *testing.T, dir string) {
			symlink(t, "nothing.py", filepath.Join(dir, "repo", "dangling.py"))
		}, file: "repo/dangling.py", msg: "dangling"},
		{name: "repo symlink escaping through another link", fs: func(t *testing.T, dir string) {
			// By its text a/b/sneaky stays in a/b/, but "x" is a link to repo/ itself,
			// so "x/.." is the task directory.
			mkdir(t, filepath.Join(dir, "repo", "a", "b"))
			symlink(t, "../..", filepath.Join(dir, "repo", "a", "b", "x"))
			symlink(t, "x/../solution.patch", filepath.Join(dir, "repo", "a", "b", "sneaky"))
		}, file: "repo/a/b/sneaky", msg: "resolves outside repo"},
		{name: "repo fifo", fs: func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "repo", "pipe"), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, file: "repo/pipe", msg: "unsupported file type"},
		{name: "task.yaml is a symlink", fs: func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, FileName), filepath.Join(dir, "real.yaml"))
			symlink(t, "real.yaml", filepath.Join(dir, FileName))
		}, file: "task.yaml", msg: "symbolic link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFixture(t)
			if tc.yaml != nil {
				writeYAML(t, dir, tc.yaml(fixtureYAML))
			}
			if tc.fs != nil {
				tc.fs(t, dir)
			}
			tk, err := Load(dir)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", tk)
			}
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) {
				t.Fatalf("Load = %v (%T), want an *Error matching ErrInvalid", err, err)
			}
			file := tc.file
			if file == "" {
				file = FileName
			}
			if !strings.HasSuffix(filepath.ToSlash(e.File), "/"+file) || e.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Load = %q\n(file %q field %q), want file .../%s, field %q, message with %q", err, e.File, e.Field, file, tc.field, tc.msg)
			}
		})
	}
}

// TestLoadNoPublicTests: a task may hide every test (an imported SWE-bench
// instance whose test patch only adds files has no public tests).
func TestLoadNoPublicTests(t *testing.T) {
	dir := writeFixture(t)
	writeYAML(t, dir, strings.Replace(fixtureYAML, "public_tests:\n  - tests/test_calc.py\n", "", 1))
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.PublicTests) != 0 || !tk.Protected("tests/test_calc.py") || tk.Protected("calc.py") {
		t.Errorf("PublicTests %q; Protected(tests/test_calc.py) %v (default globs), Protected(calc.py) %v",
			tk.PublicTests, tk.Protected("tests/test_calc.py"), tk.Protected("calc.py"))
	}
}

func TestLoadPublicTestCommand(t *testing.T) {
	tests := []struct {
		name string
		yaml func(string) string
		want []string
	}{
		{"python default", nil, []string{"python3", "-B", "-m", "unittest", "-v"}},
		{"go default", func(y string) string { return strings.Replace(y, "language: python", "language: go", 1) }, []string{"go", "test", "./..."}},
		{"null is the default", func(y string) string { return y + "public_test_command: null\n" }, []string{"python3", "-B", "-m", "unittest", "-v"}},
		{"given", func(y string) string { return y + "public_test_command: [python3, -m, unittest, tests.test_calc]\n" }, []string{"python3", "-m", "unittest", "tests.test_calc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFixture(t)
			if tc.yaml != nil {
				writeYAML(t, dir, tc.yaml(fixtureYAML))
			}
			tk, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tk.PublicTestCommand, tc.want) {
				t.Errorf("PublicTestCommand = %q, want %q", tk.PublicTestCommand, tc.want)
			}
			if !slices.Equal(tk.TestCommand, []string{"python3", "-I", "-S", "-B", "agentbox_unittest.py", "tests"}) {
				t.Errorf("TestCommand = %q changed with the public test command", tk.TestCommand)
			}
		})
	}
}

// TestLoadAllowsRootGitDir: a .git directory at the root of repo/ is the agent's
// history (see ImportSWEBench); it loads and stays protected, and its files are
// not repository files (a public_tests glob cannot be satisfied by them).
func TestLoadAllowsRootGitDir(t *testing.T) {
	dir := writeFixture(t)
	writeFile(t, filepath.Join(dir, "repo", ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(dir, "repo", ".git", "info", "test_in_git.py"), "x")
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git", ".git/HEAD", ".git/config"} {
		if !tk.Protected(p) {
			t.Errorf("Protected(%q) = false", p)
		}
	}
	writeYAML(t, dir, strings.Replace(fixtureYAML, "  - tests/test_calc.py\nhidden", "  - tests/test_calc.py\n  - '**/test_in_git.py'\nhidden", 1))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Errorf("Load with a public glob matching only a file in .git = %v, want matches no file", err)
	}
}

func TestLoadAllowsInsideSymlinks(t *testing.T) {
	dir := writeFixture(t)
	symlink(t, "../calc.py", filepath.Join(dir, "repo", "docs", "calc.py"))
	symlink(t, "tests/test_calc_hidden.py", filepath.Join(dir, "hidden", "alias.py"))
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tk.HiddenFiles, "alias.py") || !tk.Protected("alias.py") {
		t.Errorf("HiddenFiles %v: a hidden symlink is a hidden file and protected", tk.HiddenFiles)
	}
}

func TestLoadSuite(t *testing.T) {
	t.Run("duplicate ids", func(t *testing.T) {
		root := t.TempDir()
		for _, name := range []string{"a", "b"} {
			copyTree(t, writeFixture(t), filepath.Join(root, name))
		}
		_, err := LoadSuite(root)
		var e *Error
		if !errors.As(err, &e) || e.Field != "id" || !strings.Contains(err.Error(), "unique") {
			t.Fatalf("LoadSuite = %v, want a duplicate id error", err)
		}
	})
	t.Run("sorted and skipping other dirs", func(t *testing.T) {
		root := t.TempDir()
		for _, id := range []string{"zeta", "alpha"} {
			dir := filepath.Join(root, id+"-dir")
			copyTree(t, writeFixture(t), dir)
			writeYAML(t, dir, strings.Replace(fixtureYAML, "id: fix-1.0", "id: "+id, 1))
		}
		mkdir(t, filepath.Join(root, "notes"))
		tasks, err := LoadSuite(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != 2 || tasks[0].ID != "alpha" || tasks[1].ID != "zeta" {
			t.Fatalf("LoadSuite ids %v, want [alpha zeta]", ids(tasks))
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, err := LoadSuite(t.TempDir()); err == nil {
			t.Fatal("LoadSuite of an empty directory succeeded")
		}
	})
}

func TestExtractBuiltinRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x"), "x")
	if err := ExtractBuiltin(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("ExtractBuiltin into a non-empty dir = %v", err)
	}
}

func ids(tasks []*Task) []string {
	var s []string
	for _, t := range tasks {
		s = append(s, t.ID)
	}
	return s
}

func writeYAML(t testing.TB, dir, yaml string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	mkdir(t, filepath.Dir(name))
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, name string) {
	t.Helper()
	if err := os.MkdirAll(name, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, name string) {
	t.Helper()
	if err := os.RemoveAll(name); err != nil {
		t.Fatal(err)
	}
}
