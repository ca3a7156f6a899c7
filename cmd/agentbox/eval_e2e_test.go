package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/eval/report/reporttest"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// goCacheDir is shared by the package's eval and grade tests: the first warms it
// (~30 s), the others reuse it, as later runs of a user's agentbox do. TestMain
// puts it in the binary's private TMPDIR.
var goCacheDir string

func builtinIDs() []string {
	return []string{"C01", "C02", "C03", "G01", "G02", "G03", "J01", "J02", "calc"}
}

// nBuiltin is the size of the built-in suite, as the CLI prints it.
var nBuiltin = strconv.Itoa(len(builtinIDs()))

// pyTasks are the built-in Python tasks: the interrupt and kill tests run them
// only (their subject is eval's bookkeeping, not the suite), nPy of them.
var (
	pyTasks = []string{"--tasks", "C01,C02,C03,J01,calc"}
	nPy     = "5"
)

// TestEvalEndToEnd is the README's main job: `agentbox eval` over the built-in
// suite with the scripted policy. Every attempt resolves, every attempt's files
// are written, report.html renders the results table in headless Chromium, a
// second run with --resume does nothing, and one without it is refused.
func TestEvalEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the whole built-in suite, graded, twice (~90 s)")
	testenv.RequireRoot(t)
	testenv.Require(t, reporttest.Available(), "chromium is not installed (apt-get install chromium)")
	warmGoCache(t)
	defer noLeftovers(t, time.Now())
	out := filepath.Join(t.TempDir(), "results")
	start := time.Now()
	stdout, stderr, status := cli(t, "eval", "--out", out, "--go-cache", goCacheDir, "--progress", "lines")
	if status != 0 {
		t.Fatalf("eval: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	t.Logf("eval took %v\n%s", time.Since(start), stdout)
	for _, id := range builtinIDs() {
		if !regexpLine(stdout, id+" +1 +resolved ") {
			t.Errorf("the results table has no resolved row for %s:\n%s", id, stdout)
		}
	}
	if !strings.Contains(stdout, "resolved "+nBuiltin+"/"+nBuiltin) || !strings.Contains(stderr, "["+nBuiltin+"/"+nBuiltin+"]") {
		t.Errorf("no summary or progress:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	r, err := report.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Attempts) != len(builtinIDs()) || r.Summary.Resolved != len(builtinIDs()) || r.Interrupted || r.Policy != "scripted:reference" {
		t.Fatalf("report: %d attempts, %d resolved, interrupted %v, policy %q", len(r.Attempts), r.Summary.Resolved, r.Interrupted, r.Policy)
	}
	for _, a := range r.Attempts {
		dir := filepath.Join(out, a.Dir)
		for _, f := range []string{"trace.jsonl", "events.jsonl", "patch.diff", "grade.json", "test.log", "attempt.json"} {
			fi, err := os.Stat(filepath.Join(dir, f))
			if err != nil || fi.Size() == 0 {
				t.Errorf("%s: %s missing or empty (%v)", a.Dir, f, err)
			}
		}
		if a.StopReason != "done" || a.Steps != 4 || !a.Verdict.Resolved || a.Verdict.ApplyMethod != "strict" {
			t.Errorf("%s: stop %s, %d steps, verdict %+v", a.Dir, a.StopReason, a.Steps, a.Verdict)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rows, err := reporttest.RenderedTable(ctx, filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatalf("render report.html: %v", err)
	}
	var tasks []string
	for _, row := range rows {
		if len(row) < 3 || row[2] != "resolved" {
			t.Errorf("rendered row %q: want task, attempt, resolved", row)
			continue
		}
		tasks = append(tasks, row[0])
	}
	if !slices.Equal(tasks, builtinIDs()) {
		t.Errorf("rendered table rows %q, want %q", tasks, builtinIDs())
	}

	before, _ := os.Stat(filepath.Join(out, "C01", "1", "attempt.json"))
	stdout, stderr, status = cli(t, "eval", "--out", out, "--resume", "--go-cache", goCacheDir, "--progress", "lines")
	if status != 0 || !strings.Contains(stderr, nBuiltin+" of "+nBuiltin+" attempts already done") || !strings.Contains(stdout, "resolved "+nBuiltin+"/"+nBuiltin) {
		t.Fatalf("resume of a finished run: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	if after, _ := os.Stat(filepath.Join(out, "C01", "1", "attempt.json")); !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("resume redid a finished attempt")
	}
	_, stderr, status = cli(t, "eval", "--out", out, "--go-cache", goCacheDir)
	if status != 125 || !strings.Contains(stderr, "--resume") {
		t.Fatalf("eval into a used --out: status %d, stderr %q", status, stderr)
	}
}

// TestEvalInterruptAndResume sends SIGINT while attempts run: agentbox exits 130
// leaving no sandbox process, mount or state directory, records only finished
// attempts, and --resume completes the run.
func TestEvalInterruptAndResume(t *testing.T) {
	testenv.SkipShort(t, "five tasks, interrupted and resumed (~15 s)")
	testenv.RequireRoot(t)
	defer noLeftovers(t, time.Now())
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(agentbox, append([]string{"eval", "--out", out, "--progress", "lines", "--parallel", "2"}, pyTasks...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "[1/"+nPy+"]") {
			// One attempt is recorded; others are in their environments now.
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("interrupted eval: %v, want exit 130\n%s", err, strings.Join(lines, "\n"))
	}
	r, err := report.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || len(r.Attempts) == 0 || strconv.Itoa(len(r.Attempts)) == nPy {
		t.Fatalf("interrupted report: interrupted %v with %d attempts, want some of %s", r.Interrupted, len(r.Attempts), nPy)
	}
	done := len(r.Attempts)

	stdout, errText, status := cli(t, append([]string{"eval", "--out", out, "--resume", "--progress", "lines"}, pyTasks...)...)
	if status != 0 || !strings.Contains(errText, "resuming: "+strconv.Itoa(done)+" of "+nPy) || !strings.Contains(stdout, "resolved "+nPy+"/"+nPy) {
		t.Fatalf("resume: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, errText)
	}
}

// TestEvalBadInput: each bad flag is refused before anything runs, naming itself.
func TestEvalBadInput(t *testing.T) {
	jsonl := filepath.Join(t.TempDir(), "swe.jsonl")
	os.WriteFile(jsonl, []byte(`{"instance_id":"x"}`+"\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--attempts", "0"}, "--attempts 0"},
		{[]string{"--parallel", "-1"}, "--parallel -1"},
		{[]string{"--suite", "/no/such/suite"}, "--suite /no/such/suite"},
		{[]string{"--suite", "/etc/hostname"}, "SWE-bench JSONL"},
		{[]string{"--progress", "fancy"}, "--progress"},
		{[]string{"--policy", "magic"}, "--policy"},
		{[]string{"--policy", "openai"}, "--model is required"},
		{[]string{"--resume"}, "--resume needs --out"},
		{[]string{"--resume", "--out", filepath.Join(t.TempDir(), "none")}, "holds no run to continue"},
		{[]string{"--agent-env", "X"}, "--agent-env is for --agent-cmd"},
		{[]string{"--agent-cmd", "true", "--policy", "openai"}, "--agent-cmd and --policy exclude each other"},
		{[]string{"--agent-cmd", "true", "--agent-env", "AGENTBOX_NO_SUCH_VARIABLE"}, "--agent-env AGENTBOX_NO_SUCH_VARIABLE: not set"},
		{[]string{"--suite", jsonl}, "needs --repos"},
		{[]string{"--tasks", "C01,nope"}, `--tasks: no task "nope" in the suite`},
		{[]string{"--suite", jsonl, "--repos", t.TempDir()}, "swe-bench line 1 (x)"},
	} {
		_, stderr, status := cli(t, append([]string{"eval"}, tc.args...)...)
		if status != 125 || !strings.Contains(stderr, tc.want) {
			t.Errorf("eval %q: status %d, stderr %q; want 125 and %q", tc.args, status, stderr, tc.want)
		}
	}
}

// TestGradeCLI grades calc's reference (resolved, exit 0), the empty patch (not
// resolved, exit 1), a patch deleting the public tests (tampered, exit 1, the
// path named), and runs the oracle over the built-in suite.
func TestGradeCLI(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	tasks, err := task.Builtin(filepath.Join(dir, "suite"))
	if err != nil {
		t.Fatal(err)
	}
	var calc *task.Task
	for _, tk := range tasks {
		if tk.ID == "calc" {
			calc = tk
		}
	}
	ref := filepath.Join(calc.Dir, "solution.patch")
	empty := filepath.Join(dir, "empty.diff")
	os.WriteFile(empty, nil, 0o644)
	del := filepath.Join(dir, "delete-tests.diff")
	testSrc, err := os.ReadFile(filepath.Join(calc.Repo, "tests", "test_calc.py"))
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(testSrc), "\n")
	os.WriteFile(del, []byte("diff --git a/tests/test_calc.py b/tests/test_calc.py\ndeleted file mode 100644\n--- a/tests/test_calc.py\n+++ /dev/null\n@@ -1,"+
		strconv.Itoa(n)+" +0,0 @@\n"+prefixLines(string(testSrc), "-")), 0o644)

	for _, tc := range []struct {
		patch    string
		status   int
		resolved bool
		tampered bool
	}{{ref, 0, true, false}, {empty, 1, false, false}, {del, 1, false, true}} {
		stdout, stderr, status := cli(t, "grade", "--task", calc.Dir, "--patch", tc.patch, "--json")
		var v struct {
			Resolved    bool     `json:"resolved"`
			Tampered    bool     `json:"tampered"`
			TamperPaths []string `json:"tamper_paths"`
		}
		if err := json.Unmarshal([]byte(stdout), &v); err != nil || status != tc.status || v.Resolved != tc.resolved || v.Tampered != tc.tampered {
			t.Errorf("grade %s: status %d (%v), verdict %s, stderr %s", filepath.Base(tc.patch), status, err, stdout, stderr)
		}
		if tc.tampered && !slices.Contains(v.TamperPaths, "tests/test_calc.py") {
			t.Errorf("tamper paths %q do not name tests/test_calc.py", v.TamperPaths)
		}
	}
	stdout, stderr, status := cli(t, "grade", "--task", calc.Dir, "--patch", ref)
	if status != 0 || !strings.Contains(stdout, "resolved:") || !strings.Contains(stdout, "5/5 passed") {
		t.Errorf("grade (text): status %d\n%s\n%s", status, stdout, stderr)
	}

	// The oracle over a Python and a Go task (package grade's TestBuiltinOracle
	// runs it over every built-in task).
	t.Run("oracle", func(t *testing.T) {
		testenv.SkipShort(t, "grades two tasks' references with a warm Go build cache (~10 s)")
		warmGoCache(t)
		small := filepath.Join(dir, "small")
		for _, tk := range tasks {
			if tk.ID == "calc" || tk.ID == "G01" {
				if err := os.CopyFS(filepath.Join(small, tk.ID), os.DirFS(tk.Dir)); err != nil {
					t.Fatal(err)
				}
			}
		}
		stdout, stderr, status := cli(t, "grade", "--oracle", "--suite", small, "--go-cache", goCacheDir)
		if status != 0 || !strings.Contains(stdout, "oracle: 2/2 tasks ok") {
			t.Fatalf("grade --oracle: status %d\n%s\n%s", status, stdout, stderr)
		}
	})
	for _, args := range [][]string{
		{"grade"},
		{"grade", "--task", calc.Dir},
		{"grade", "--oracle", "--task", calc.Dir},
		{"grade", "--task", calc.Dir, "--patch", "/no/such.diff"},
		{"grade", "--task", dir, "--patch", ref},
	} {
		if _, stderr, status := cli(t, args...); status != 125 || stderr == "" {
			t.Errorf("%q: status %d, stderr %q; want 125 and a reason", args, status, stderr)
		}
	}
}

func prefixLines(s, p string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(p + l)
		}
	}
	return b.String()
}

func regexpLine(text, pattern string) bool {
	for _, l := range strings.Split(text, "\n") {
		if ok, _ := regexpMatch(pattern, l); ok {
			return true
		}
	}
	return false
}

func regexpMatch(pattern, s string) (bool, error) { return regexp.MatchString("^"+pattern, s) }

// noLeftovers checks what the agentbox processes started since then left: no
// process running this binary's agentbox (sandbox inits are re-executions of it),
// no state directory of a local environment manager or of a sandbox's upper layer
// in the tests' private TMPDIR, no mount below one. Other agentbox processes on
// the machine run other binaries and keep their state in other directories.
func noLeftovers(t *testing.T, since time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		procs, _ := filepath.Glob("/proc/[0-9]*/exe")
		for _, p := range procs {
			if exe, err := os.Readlink(p); err == nil && (exe == agentbox || exe == agentbox+" (deleted)") {
				left = append(left, "process "+filepath.Base(filepath.Dir(p)))
			}
		}
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentbox-agent-*"))
		upper, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentbox-state", "sb-*"))
		dirs = append(dirs, upper...)
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.ModTime().After(since) {
				left = append(left, "state directory "+d)
			}
		}
		if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
			for _, d := range dirs {
				if strings.Contains(string(mi), d) {
					left = append(left, "mount under "+d)
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: %s", strings.Join(left, ", "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEvalModelPolicy runs eval with the openai policy against a scripted model
// server on calc: the model's fix is graded resolved, and the planted API key is
// nowhere in the results directory or the output.
func TestEvalModelPolicy(t *testing.T) {
	testenv.RequireRoot(t)
	const key = "sk-eval-PLANTED-KEY-0a1b2c3d4e5f6789"
	tasks, err := task.Builtin(filepath.Join(t.TempDir(), "suite"))
	if err != nil {
		t.Fatal(err)
	}
	calc := tasks[slices.IndexFunc(tasks, func(tk *task.Task) bool { return tk.ID == "calc" })]
	srv := modeltest.NewOpenAI(t,
		modeltest.Turn{Text: "OK"}, // the preflight
		modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "patch_apply",
			Args: `{"path":"calc.py","old":"    \"\"\"Return the sum of a and b.\"\"\"\n    return a - b","new":"    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b"}`}}},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "test_run", Args: `{}`}}},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "task_finish", Args: `{"summary":"add fixed"}`}}},
	)
	out := filepath.Join(t.TempDir(), "results")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_API_KEY=" + key}
	stdout, stderr, status := run(t, env, "eval", "--suite", calc.Dir, "--policy", "openai", "--model", "m-test",
		"--base-url", srv.URL, "--out", out, "--progress", "lines")
	if status != 0 || !strings.Contains(stdout, "resolved 1/1") || len(srv.Received()) != 5 {
		t.Fatalf("eval: status %d, %d model requests\nstdout:\n%s\nstderr:\n%s", status, len(srv.Received()), stdout, stderr)
	}
	if strings.Contains(stdout+stderr, key) {
		t.Error("the key is in the output")
	}
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(key)) {
			t.Errorf("the key is in %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Load(out)
	if err != nil || r.Policy != "openai" || r.Model != "m-test" || r.Attempts[0].Steps != 4 {
		t.Fatalf("report: %+v, %v", r, err)
	}
}

// TestEvalKilled kills eval with SIGKILL mid-run (no cleanup runs): the next
// agentbox command removes what it left, and --resume completes the run.
func TestEvalKilled(t *testing.T) {
	testenv.SkipShort(t, "five tasks, killed and resumed (~15 s)")
	testenv.RequireRoot(t)
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(agentbox, append([]string{"eval", "--out", out, "--progress", "lines"}, pyTasks...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "[1/"+nPy+"]") {
			cmd.Process.Kill()
			break
		}
	}
	cmd.Wait()
	stdout, errText, status := cli(t, append([]string{"eval", "--out", out, "--resume", "--progress", "lines"}, pyTasks...)...)
	if status != 0 || !strings.Contains(errText, "resuming: ") || !strings.Contains(stdout, "resolved "+nPy+"/"+nPy) {
		t.Fatalf("resume after SIGKILL: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, errText)
	}
	noLeftovers(t, start)
}
