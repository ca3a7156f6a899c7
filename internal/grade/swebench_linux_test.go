package grade

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestSWEBenchImportOracle: a task imported from a SWE-bench row (a real git
// repository, a base commit, a gold patch, a test patch) grades in a real
// environment with the project's own framework (unittest here, detected): the
// gold patch resolves it and the empty patch does not. The agent's workspace has
// the history up to the base commit and git can read it there.
func TestSWEBenchImportOracle(t *testing.T) {
	m := envtest.New(t)
	for _, tool := range []string{"git", "python3"} {
		_, err := exec.LookPath(tool)
		testenv.Require(t, err == nil, "needs "+tool)
	}
	repos := t.TempDir()
	clone := filepath.Join(repos, "acme__calc")
	git := sweGit(t, clone)
	sweWrite(t, clone, map[string]string{
		"calc.py":            "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
		"tests/__init__.py":  "",
		"tests/test_calc.py": "import unittest\n\nfrom calc import sub\n\n\nclass CalcTest(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n",
	})
	git("add", "-A")
	git("commit", "-q", "-m", "early")
	early := strings.TrimSpace(git("rev-parse", "HEAD"))
	sweWrite(t, clone, map[string]string{"README": "calc\n"})
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := strings.TrimSpace(git("rev-parse", "HEAD"))
	sweWrite(t, clone, map[string]string{"calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"})
	git("commit", "-q", "-am", "fix")
	fix := strings.TrimSpace(git("rev-parse", "HEAD"))
	sweWrite(t, clone, map[string]string{
		"tests/test_add.py": "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(4, 0), 4)\n",
	})
	git("add", "-A")
	git("commit", "-q", "-m", "tests")
	gold := git("diff", base, fix)
	row, err := json.Marshal(map[string]any{
		"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": base,
		"problem_statement": "add(2, 3) returns -1; make calc.add return the sum.\n",
		"patch":             gold, "test_patch": git("diff", fix, "HEAD", "--", "tests"),
		"FAIL_TO_PASS": `["tests/test_add.py::AddTest::test_add"]`,
		"PASS_TO_PASS": `["tests/test_add.py::AddTest::test_zero"]`,
	})
	if err != nil {
		t.Fatal(err)
	}
	done, err := task.ImportSWEBench(t.Context(), bytes.NewReader(row), task.ImportOptions{OutDir: t.TempDir(), Repos: repos})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(done[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	before := testenv.TreeHash(t, tk.Dir)

	v := gradeIt(t, m, tk, []byte(gold), Options{})
	if !v.Resolved || v.Tampered || !v.PatchApplied || v.ApplyMethod != "strict" ||
		len(v.FailToPass.Passed) != len(tk.FailToPass) || len(v.PassToPass.Passed) != len(tk.PassToPass) {
		t.Errorf("gold patch: %s", dump(v))
	}
	v = gradeIt(t, m, tk, nil, Options{})
	if v.Resolved || v.Tampered || v.ApplyMethod != "empty" ||
		!slices.Equal(v.FailToPass.Failed, tk.FailToPass) || len(v.PassToPass.Failed) != 0 {
		t.Errorf("empty patch: want fail_to_pass failed and pass_to_pass passed: %s", dump(v))
	}
	if after := testenv.TreeHash(t, tk.Dir); after != before {
		t.Error("grading modified the imported task directory")
	}

	t.Run("git log in the workspace", func(t *testing.T) {
		info, err := m.Create(t.Context(), env.CreateOptions{Owner: owner, Workspace: tk.Repo})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := m.Destroy(t.Context(), owner, info.ID); err != nil {
				t.Errorf("Destroy: %v", err)
			}
		}()
		res, err := m.Exec(t.Context(), owner, info.ID, env.ExecRequest{
			Argv: []string{"git", "log", "--all", "--format=%H"}, Env: []string{"PATH=" + DefaultPath, "HOME=/tmp"},
			Cwd: "/workspace", Timeout: 30 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(res.Stdout), base+"\n"+early; res.ExitStatus() != 0 || got != want {
			t.Errorf("git log in the environment: exit %d, stdout %q, stderr %q; want %q", res.ExitStatus(), got, res.Stderr, want)
		}
	})
}

// sweGit returns a function running git in dir, isolated from the host's
// configuration; dir is created with an empty repository.
func sweGit(t *testing.T, dir string) func(args ...string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
			"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com",
			"GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@example.com"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	run("init", "-q", "-b", "main")
	return run
}

func sweWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
