package task

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func importRows(t *testing.T, o ImportOptions, input string) ([]string, error) {
	t.Helper()
	done, err := ImportSWEBench(t.Context(), strings.NewReader(input), o)
	var dirs []string
	for _, im := range done {
		dirs = append(dirs, im.Dir)
	}
	return dirs, err
}

// TestImportSWEBench imports one instance from a real repository and checks the
// task directory: it loads with the row's fields and the framework detected (a
// unittest project, run with python -m unittest -v on the test patch's modules),
// repo/ is the base tree with a .git holding base and its ancestors and nothing
// else, the hidden tests are in hidden/ only, and the reference resolves the task
// while the starting code does not (run on the host, as the built-in suite's
// acceptance test does).
func TestImportSWEBench(t *testing.T) {
	f := sweFixt(t)
	out := t.TempDir()
	row := f.row()
	dirs, err := importRows(t, ImportOptions{OutDir: out, Repos: f.repos}, jsonl(t, row))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(out, "acme__calc-1")}; !slices.Equal(dirs, want) {
		t.Fatalf("dirs = %q, want %q", dirs, want)
	}
	if leftovers := entries(t, out); !slices.Equal(leftovers, []string{"acme__calc-1"}) {
		t.Errorf("OutDir holds %q, want only the task", leftovers)
	}
	tk, err := Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}

	t.Run("task fields", func(t *testing.T) {
		want := map[string]any{
			"ID":          "acme__calc-1",
			"Title":       "acme__calc-1: calc.add subtracts",
			"Statement":   row["problem_statement"],
			"Language":    Python,
			"PublicTests": []string{"tests/test_calc.py"},
			"HiddenFiles": []string{"tests/test_calc.py", "tests/test_calc_hidden.py"},
			"TestCommand": []string{"python3", "-m", "unittest", "-v", "tests.test_calc", "tests.test_calc_hidden"},
			"PublicTest":  []string{"python3", "-m", "unittest", "-v"},
			"Format":      Unittest,
			"Witnessed":   false,
			"FailToPass":  row["FAIL_TO_PASS"],
			"PassToPass":  row["PASS_TO_PASS"],
			"Limits":      Limits{DefaultTimeout, DefaultMemory, DefaultPids},
			"Metadata": map[string]any{"source": "swe-bench", "instance_id": "acme__calc-1", "repo": "acme/calc",
				"base_commit": f.base, "hints_text": "see the comment on line 4", "version": "1.0", "created_at": "2020-01-02T03:04:05Z",
				"framework": "unittest", "environment_setup_commit": f.early},
		}
		got := map[string]any{
			"ID": tk.ID, "Title": tk.Title, "Statement": tk.Statement, "Language": tk.Language,
			"PublicTests": tk.PublicTests, "HiddenFiles": tk.HiddenFiles, "TestCommand": tk.TestCommand,
			"PublicTest": tk.PublicTestCommand, "Format": tk.ResultFormat, "Witnessed": tk.Witnessed, "FailToPass": tk.FailToPass,
			"PassToPass": tk.PassToPass, "Limits": tk.Limits, "Metadata": tk.Metadata,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("task (-want +got):\n%s", diff)
		}
		if ref, err := tk.ReadReference(); err != nil || string(ref) != f.gold {
			t.Errorf("reference = %q, %v; want the gold patch", ref, err)
		}
	})

	t.Run("repo is the base tree", func(t *testing.T) {
		var files []string
		err := filepath.WalkDir(tk.Repo, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == tk.Repo {
				return err
			}
			rel, _ := filepath.Rel(tk.Repo, p)
			if rel == ".git" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(maps.Keys(f.files))
		if !slices.Equal(files, want) {
			t.Fatalf("repo/ files %q, want the base tree %q", files, want)
		}
		for name, data := range f.files {
			if got := string(mustRead(t, filepath.Join(tk.Repo, name))); got != data {
				t.Errorf("repo/%s = %q, want the base version %q", name, got, data)
			}
		}
	})

	t.Run("hidden tests only in hidden", func(t *testing.T) {
		if _, err := os.Lstat(filepath.Join(tk.Repo, "tests", "test_calc_hidden.py")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("repo/tests/test_calc_hidden.py: %v, want it absent", err)
		}
		for name, data := range sweLater {
			if got := string(mustRead(t, filepath.Join(tk.Hidden, name))); got != data {
				t.Errorf("hidden/%s = %q, want the post-test_patch version", name, got)
			}
		}
	})

	t.Run("git history", func(t *testing.T) {
		home := t.TempDir()
		git := func(args ...string) (string, error) { return hostGit(home, tk.Repo, args...) }
		must := func(args ...string) string {
			t.Helper()
			out, err := git(args...)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(out)
		}
		if got, want := must("log", "--format=%H", "--all"), f.base+"\n"+f.early; got != want {
			t.Errorf("git log --all:\n%s\nwant base and its ancestor:\n%s", got, want)
		}
		if got := must("rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
			t.Errorf("HEAD is on %q, want main", got)
		}
		if got := must("for-each-ref", "--format=%(refname)"); got != "refs/heads/main" {
			t.Errorf("refs %q, want only refs/heads/main", got)
		}
		for _, args := range [][]string{{"tag", "-l"}, {"remote", "-v"}, {"reflog", "--all"}, {"stash", "list"}, {"status", "--porcelain", "--ignored"}} {
			if got := must(args...); got != "" {
				t.Errorf("git %s = %q, want nothing", strings.Join(args, " "), got)
			}
		}
		for name, sha := range map[string]string{"fix commit": f.fix, "later commit": f.later, "side branch": f.feature,
			"stash": f.stash, "tag object": f.baseTag, "hidden test blob": f.hiddenBlob, "fixed calc.py blob": f.fixBlob} {
			if _, err := git("cat-file", "-e", sha); err == nil {
				t.Errorf("the %s %s is in the exported repository", name, sha)
			}
		}
		if _, err := git("cat-file", "-e", f.early); err != nil {
			t.Errorf("the early commit is missing: %v (the check above would pass vacuously)", err)
		}
		if got := must("config", "--local", "--list"); strings.Contains(got, "remote.") || !strings.Contains(got, "user.name=agentbox") {
			t.Errorf("local config:\n%s", got)
		}
		for _, name := range []string{"hooks", "FETCH_HEAD", "ORIG_HEAD", "logs", "refs/stash"} {
			if _, err := os.Lstat(filepath.Join(tk.Repo, ".git", name)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf(".git/%s: %v, want it absent", name, err)
			}
		}
		// Nothing in .git names the host clone (a remote URL or FETCH_HEAD would).
		filepath.WalkDir(filepath.Join(tk.Repo, ".git"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.Contains(string(mustRead(t, p)), f.repos) {
				t.Errorf("%s names the host clone %s", p, f.repos)
			}
			return err
		})
	})

	t.Run("grades", func(t *testing.T) {
		r := runTask(t, tk, runOpts{patch: []byte(f.gold)})
		if r.err != nil {
			t.Fatalf("Parse: %v\n%s", r.err, r.log)
		}
		for _, id := range slices.Concat(tk.FailToPass, tk.PassToPass) {
			if o := r.outcome(id); o != OutcomePass {
				t.Errorf("gold patch: %s is %q, want pass\n%s", id, o, r.log)
			}
		}
		r = runTask(t, tk, runOpts{})
		if r.err != nil {
			t.Fatalf("Parse: %v\n%s", r.err, r.log)
		}
		for _, id := range tk.FailToPass {
			if o := r.outcome(id); o != OutcomeFail {
				t.Errorf("starting code: fail_to_pass %s is %q, want fail\n%s", id, o, r.log)
			}
		}
		for _, id := range tk.PassToPass {
			if o := r.outcome(id); o != OutcomePass {
				t.Errorf("starting code: pass_to_pass %s is %q, want pass\n%s", id, o, r.log)
			}
		}
	})
}

// TestImportSWEBenchDatasetShapes: the published datasets hold FAIL_TO_PASS and
// PASS_TO_PASS as strings of JSON, version as a string or a number, and more
// fields than the importer uses; several rows import in order, blank lines skipped.
func TestImportSWEBenchDatasetShapes(t *testing.T) {
	f := sweFixt(t)
	a := f.row()
	a["FAIL_TO_PASS"] = `["tests/test_calc.py::CalcTest::test_add", "tests/test_calc_hidden.py::AddTest::test_commutative"]`
	a["PASS_TO_PASS"] = `["tests/test_calc.py::CalcTest::test_sub", "tests/test_calc.py::CalcTest::test_sub"]`
	b := f.row()
	b["instance_id"] = "acme__calc-2"
	b["PASS_TO_PASS"] = "[]"
	b["version"] = 3.0
	delete(b, "hints_text")
	b["created_at"] = nil
	out := t.TempDir()
	o := ImportOptions{OutDir: out, Repos: f.repos, Limits: Limits{Timeout: 90 * time.Second, Memory: 256 << 20, Pids: 64}}
	dirs, err := importRows(t, o, "\n"+jsonl(t, a)+"\n  \n"+jsonl(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 || filepath.Base(dirs[0]) != "acme__calc-1" || filepath.Base(dirs[1]) != "acme__calc-2" {
		t.Fatalf("dirs = %q", dirs)
	}
	ta, err := Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tests/test_calc.py::CalcTest::test_add", "tests/test_calc_hidden.py::AddTest::test_commutative"}; !slices.Equal(ta.FailToPass, want) {
		t.Errorf("FailToPass = %q, want %q", ta.FailToPass, want)
	}
	if want := []string{"tests/test_calc.py::CalcTest::test_sub"}; !slices.Equal(ta.PassToPass, want) {
		t.Errorf("PassToPass = %q, want the repeated id once: %q", ta.PassToPass, want)
	}
	if ta.Limits != o.Limits {
		t.Errorf("Limits = %+v, want %+v", ta.Limits, o.Limits)
	}
	tb, err := Load(dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.PassToPass) != 0 || tb.Metadata["version"] != "3" || tb.Metadata["hints_text"] != nil || tb.Metadata["created_at"] != nil {
		t.Errorf("second task: pass_to_pass %q, metadata %v", tb.PassToPass, tb.Metadata)
	}
}

// TestImportSWEBenchSpecs: a spec for the row's repository and version sets the
// framework and environment, a "*" spec applies to other versions, and the
// override (the command line's flags) wins over both; each says why.
func TestImportSWEBenchSpecs(t *testing.T) {
	f := sweFixt(t)
	specs := Specs{"acme/calc": {
		"1.0": {Framework: Pytest, Env: []string{"PYTHONPATH=lib"}},
		"*":   {Framework: Command, TestCommand: []string{"make", "check"}, ResultFormat: TAP},
	}}
	pytestCmd := append(slices.Clone(pytestCommand), "tests/test_calc.py", "tests/test_calc_hidden.py")
	for _, tc := range []struct {
		name      string
		version   string
		override  Spec
		framework Framework
		cmd       []string
		format    ResultFormat
		env       []string
	}{
		{"exact version", "1.0", Spec{}, Pytest, pytestCmd, JUnit, []string{"PYTHONPATH=lib"}},
		{"any version", "2.0", Spec{}, Command, []string{"make", "check"}, TAP, nil},
		{"override", "1.0", Spec{Framework: PyUnittest}, PyUnittest, []string{"python3", "-m", "unittest", "-v", "tests.test_calc", "tests.test_calc_hidden"}, Unittest, []string{"PYTHONPATH=lib"}},
		{"override command", "1.0", Spec{TestCommand: []string{"python3", "run.py"}, ResultFormat: ExitCode}, Pytest, []string{"python3", "run.py"}, ExitCode, []string{"PYTHONPATH=lib"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			row := f.row()
			row["version"] = tc.version
			if tc.format == ExitCode {
				row["FAIL_TO_PASS"], row["PASS_TO_PASS"] = []string{ExitCodeID}, []string{}
			}
			o := ImportOptions{OutDir: t.TempDir(), Repos: f.repos, Specs: specs, Override: tc.override}
			done, err := ImportSWEBench(t.Context(), strings.NewReader(jsonl(t, row)), o)
			if err != nil {
				t.Fatal(err)
			}
			if done[0].Choice.Framework != tc.framework || done[0].Choice.Reason == "" {
				t.Errorf("choice %+v, want %s with a reason", done[0].Choice, tc.framework)
			}
			tk, err := Load(done[0].Dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tk.TestCommand, tc.cmd) || tk.ResultFormat != tc.format || !slices.Equal(tk.Environ, tc.env) {
				t.Errorf("test_command %q, result_format %s, env %q; want %q, %s, %q", tk.TestCommand, tk.ResultFormat, tk.Environ, tc.cmd, tc.format, tc.env)
			}
		})
	}
}

func TestImportSWEBenchRowErrors(t *testing.T) {
	f := sweFixt(t)
	set := func(key string, v any) func(map[string]any) {
		return func(r map[string]any) { r[key] = v }
	}
	del := func(key string) func(map[string]any) {
		return func(r map[string]any) { delete(r, key) }
	}
	deleteTest := "diff --git a/tests/test_calc.py b/tests/test_calc.py\ndeleted file mode 100644\n--- a/tests/test_calc.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-import unittest\n"
	newFile := func(name string) string {
		return "diff --git a/" + name + " b/" + name + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + name + "\n@@ -0,0 +1 @@\n+x = 1\n"
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		input  string // instead of the mutated row
		line   int    // default 1
		field  string
		msg    string
	}{
		{name: "not JSON", input: "{\"instance_id\": \n", field: "", msg: "not a JSON object"},
		{name: "missing patch", mutate: del("patch"), field: "patch", msg: "missing"},
		{name: "missing instance_id", mutate: del("instance_id"), field: "instance_id", msg: "missing"},
		{name: "null problem_statement", mutate: set("problem_statement", nil), field: "problem_statement", msg: "missing"},
		{name: "missing FAIL_TO_PASS", mutate: del("FAIL_TO_PASS"), field: "FAIL_TO_PASS", msg: "missing"},
		{name: "missing PASS_TO_PASS", mutate: del("PASS_TO_PASS"), field: "PASS_TO_PASS", msg: "missing"},
		{name: "instance_id with a slash", mutate: set("instance_id", "acme/calc-1"), field: "instance_id", msg: "use only letters"},
		{name: "instance_id dots", mutate: set("instance_id", ".."), field: "instance_id", msg: "not just dots"},
		{name: "instance_id a number", mutate: set("instance_id", 7), field: "instance_id", msg: "want a JSON string"},
		{name: "repo without owner", mutate: set("repo", "calc"), field: "repo", msg: "want owner/name"},
		{name: "repo escaping", mutate: set("repo", "../calc"), field: "repo", msg: "want owner/name"},
		{name: "unknown repo", mutate: set("repo", "acme/nothing"), field: "repo",
			msg: "tried " + filepath.Join(f.repos, "acme__nothing") + ", " + filepath.Join(f.repos, "acme", "nothing") + ", " + filepath.Join(f.repos, "nothing")},
		{name: "repo not a git repository", mutate: set("repo", "x/home"), field: "repo", msg: "not a git repository"},
		{name: "base_commit abbreviated", mutate: set("base_commit", f.base[:12]), field: "base_commit", msg: "full commit hash"},
		{name: "base_commit unknown", mutate: set("base_commit", strings.Repeat("ab", 20)), field: "base_commit", msg: "is not a commit in " + f.clone},
		{name: "base_commit a blob", mutate: set("base_commit", f.hiddenBlob), field: "base_commit", msg: "is not a commit"},
		{name: "problem_statement blank", mutate: set("problem_statement", " \n"), field: "problem_statement", msg: "blank"},
		{name: "problem_statement huge", mutate: set("problem_statement", strings.Repeat("x", 65<<10)), field: "problem_statement", msg: "over the 65536-byte limit"},
		{name: "FAIL_TO_PASS empty", mutate: set("FAIL_TO_PASS", "[]"), field: "FAIL_TO_PASS", msg: "empty"},
		{name: "FAIL_TO_PASS a number", mutate: set("FAIL_TO_PASS", 3), field: "FAIL_TO_PASS", msg: "want a JSON array"},
		{name: "FAIL_TO_PASS string of one id", mutate: set("FAIL_TO_PASS", "tests/test_calc.py::CalcTest::test_add"), field: "FAIL_TO_PASS", msg: "does not hold a JSON array"},
		{name: "FAIL_TO_PASS blank id", mutate: set("FAIL_TO_PASS", []string{" test_add"}), field: "FAIL_TO_PASS[0]", msg: "leading or trailing space"},
		{name: "id in both lists", mutate: set("PASS_TO_PASS", []string{"tests/test_calc.py::CalcTest::test_add"}), field: "PASS_TO_PASS[0]", msg: "also in FAIL_TO_PASS"},
		{name: "version an object", mutate: set("version", map[string]int{"a": 1}), field: "version", msg: "want a JSON string"},
		{name: "patch not a diff", mutate: set("patch", "fix it\n"), field: "patch", msg: "no file changes"},
		{name: "test_patch deletes", mutate: set("test_patch", deleteTest), field: "test_patch", msg: "deletes tests/test_calc.py"},
		{name: "test_patch outside the repo", mutate: set("test_patch", newFile("../evil.py")), field: "test_patch", msg: "not a clean path inside the repository"},
		{name: "test_patch in .git", mutate: set("test_patch", newFile(".git/hooks/post-checkout")), field: "test_patch", msg: "inside .git"},
		{name: "test_patch renames", mutate: set("test_patch", "diff --git a/tests/test_calc.py b/tests/test_x.py\nsimilarity index 100%\nrename from tests/test_calc.py\nrename to tests/test_x.py\n"), field: "test_patch", msg: "renames"},
		{name: "duplicate instance", input: jsonl(t, f.row()) + "\n" + jsonl(t, f.row()), line: 3, field: "instance_id", msg: "also on line 1"},
		{name: "bad second row", input: jsonl(t, f.row()) + `{"instance_id": "x"}` + "\n", line: 2, field: "repo", msg: "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			input := tc.input
			if input == "" {
				r := f.row()
				tc.mutate(r)
				input = jsonl(t, r)
			}
			out := filepath.Join(t.TempDir(), "out")
			dirs, err := importRows(t, ImportOptions{OutDir: out, Repos: f.repos}, input)
			checkImportError(t, err, tc.line, tc.field, tc.msg)
			if len(dirs) != 0 {
				t.Errorf("dirs = %q, want none", dirs)
			}
			if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("OutDir was created (%v); rows are checked before anything is written", err)
			}
		})
	}
}

// TestImportSWEBenchLateErrors: a row that fails once its tree is exported
// leaves nothing behind, and the rows before it stay imported.
func TestImportSWEBenchLateErrors(t *testing.T) {
	f := sweFixt(t)
	tests := []struct {
		name, key, value string
		field, msg       string
	}{
		{"gold touches a test", "patch", strings.ReplaceAll(f.testPatch, "tests/test_calc_hidden.py", "tests/test_other.py"), "patch", `protected path "tests/test_calc.py"`},
		{"gold does not apply", "patch", strings.Replace(f.gold, "-    return a - b", "-    return a / b", 1), "patch", "does not apply to repo/calc.py"},
		{"test_patch does not apply", "test_patch", strings.Replace(f.testPatch, "-from calc import sub", "-from calc import div", 1), "test_patch", "does not apply to repo/tests/test_calc.py"},
		{"test_patch without test modules", "test_patch", "diff --git a/docs/x.txt b/docs/x.txt\nnew file mode 100644\n--- /dev/null\n+++ b/docs/x.txt\n@@ -0,0 +1 @@\n+x\n", "test_patch", "no test*.py or *_test.py module"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			good := f.row()
			bad := f.row()
			bad["instance_id"] = "acme__calc-2"
			bad[tc.key] = tc.value
			out := t.TempDir()
			dirs, err := importRows(t, ImportOptions{OutDir: out, Repos: f.repos}, jsonl(t, good, bad))
			checkImportError(t, err, 2, tc.field, tc.msg)
			if want := []string{filepath.Join(out, "acme__calc-1")}; !slices.Equal(dirs, want) {
				t.Errorf("dirs = %q, want %q", dirs, want)
			}
			if _, err := Load(filepath.Join(out, "acme__calc-1")); err != nil {
				t.Errorf("the first row's task: %v", err)
			}
			if got := entries(t, out); !slices.Equal(got, []string{"acme__calc-1"}) {
				t.Errorf("OutDir holds %q, want only the first task", got)
			}
		})
	}
}

func TestImportSWEBenchRefusesExisting(t *testing.T) {
	f := sweFixt(t)
	out := t.TempDir()
	mkdir(t, filepath.Join(out, "acme__calc-1"))
	_, err := importRows(t, ImportOptions{OutDir: out, Repos: f.repos}, jsonl(t, f.row()))
	checkImportError(t, err, 1, "instance_id", "already exists")
	if got := entries(t, filepath.Join(out, "acme__calc-1")); len(got) != 0 {
		t.Errorf("the existing directory was written to: %q", got)
	}
}

func TestImportSWEBenchCanceled(t *testing.T) {
	f := sweFixt(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out := filepath.Join(t.TempDir(), "out")
	_, err := ImportSWEBench(ctx, strings.NewReader(jsonl(t, f.row())), ImportOptions{OutDir: out, Repos: f.repos})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ImportSWEBench with a canceled context = %v, want context.Canceled", err)
	}
}

func TestImportSWEBenchOptions(t *testing.T) {
	dir := t.TempDir()
	ok := ImportOptions{OutDir: dir, Repos: dir}
	tests := []struct {
		name   string
		change func(*ImportOptions)
		msg    string
	}{
		{"no OutDir", func(o *ImportOptions) { o.OutDir = "" }, "OutDir is empty"},
		{"no Repos", func(o *ImportOptions) { o.Repos = "" }, "Repos is empty"},
		{"unknown language", func(o *ImportOptions) { o.Override.Language = "rust" }, `language "rust"`},
		{"unknown framework", func(o *ImportOptions) { o.Override.Framework = "nose" }, `framework "nose"`},
		{"command without a format", func(o *ImportOptions) { o.Override.Framework, o.Override.TestCommand = Command, []string{"pytest"} }, "needs test_command and result_format"},
		{"empty program", func(o *ImportOptions) { o.Override.TestCommand = []string{""} }, "test_command: missing or empty program"},
		{"go-test-json for python", func(o *ImportOptions) { o.Override.ResultFormat = GoTestJSON }, "needs language go"},
		{"empty public command", func(o *ImportOptions) { o.Override.PublicTestCommand = []string{} }, "public_test_command: missing"},
		{"reserved env", func(o *ImportOptions) { o.Override.Env = []string{"AGENTBOX_NONCE=x"} }, "set by the grader"},
		{"negative timeout", func(o *ImportOptions) { o.Limits.Timeout = -time.Second }, "Limits.Timeout"},
		{"tiny memory", func(o *ImportOptions) { o.Limits.Memory = 1000 }, "Limits.Memory"},
		{"negative pids", func(o *ImportOptions) { o.Limits.Pids = -1 }, "Limits.Pids"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.change(&o)
			_, err := ImportSWEBench(t.Context(), strings.NewReader("{}\n"), o)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("ImportSWEBench = %v, want an error with %q", err, tc.msg)
			}
		})
	}
	t.Run("no rows", func(t *testing.T) {
		_, err := ImportSWEBench(t.Context(), strings.NewReader("\n\n"), ok)
		if err == nil || !strings.Contains(err.Error(), "no rows") {
			t.Fatalf("ImportSWEBench of blank input = %v", err)
		}
	})
}

func checkImportError(t *testing.T, err error, line int, field, msg string) {
	t.Helper()
	if line == 0 {
		line = 1
	}
	var e *ImportError
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want an *ImportError", err, err)
	}
	if e.Line != line || e.Field != field || !strings.Contains(err.Error(), msg) {
		t.Fatalf("err = %q\n(line %d field %q), want line %d, field %q, message with %q", err, e.Line, e.Field, line, field, msg)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// FuzzSWERow feeds mutated JSONL lines to the row checker: no panics, every
// rejection an *ImportError naming the line, and accepted rows hold what the
// importer relies on without looking again.
func FuzzSWERow(f *testing.F) {
	base := map[string]any{
		"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": strings.Repeat("a1", 20),
		"problem_statement": "add is wrong\n", "patch": "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\n",
		"test_patch":   "diff --git a/tests/test_x.py b/tests/test_x.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_x.py\n@@ -0,0 +1 @@\n+x\n",
		"FAIL_TO_PASS": `["tests/test_x.py::T::test_a"]`, "PASS_TO_PASS": []string{"tests/test_x.py::T::test_b"},
	}
	seed, err := json.Marshal(base)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"instance_id":"x","FAIL_TO_PASS":"\"[]\""}`))
	if _, err := parseSWERow(1, seed); err != nil {
		f.Fatalf("the seed row is rejected, so the fuzzer would never reach the accepted branch: %v", err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		row, err := parseSWERow(7, data)
		if err != nil {
			var e *ImportError
			if !errors.As(err, &e) || e.Line != 7 {
				t.Fatalf("rejection %v (%T), want an *ImportError on line 7", err, err)
			}
			return
		}
		switch {
		case checkID(row.InstanceID) != nil:
			t.Fatalf("accepted instance_id %q", row.InstanceID)
		case !commitRE().MatchString(row.BaseCommit):
			t.Fatalf("accepted base_commit %q", row.BaseCommit)
		case strings.Count(row.Repo, "/") != 1 || strings.Contains(row.Repo, ".."+"/") || strings.HasSuffix(row.Repo, "/.."):
			t.Fatalf("accepted repo %q", row.Repo)
		case len(row.FailToPass) == 0 || strings.TrimSpace(row.ProblemStatement) == "":
			t.Fatalf("accepted an empty FAIL_TO_PASS or statement: %+v", row)
		case len(row.testFiles) == 0:
			t.Fatal("accepted a test patch without files")
		}
		for _, tf := range row.testFiles {
			if tf.IsDelete || tf.IsRename || checkPatchName(tf.NewName) != nil {
				t.Fatalf("accepted the test patch file %+v", tf)
			}
		}
		seen := map[string]bool{}
		for _, id := range slices.Concat(row.FailToPass, row.PassToPass) {
			if seen[id] || checkTestID("", id) != nil {
				t.Fatalf("accepted test id %q (duplicate or malformed)", id)
			}
			seen[id] = true
		}
	})
}
