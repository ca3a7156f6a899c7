package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// Attacker-controlled text: a patch and a test log that try to close the <pre>
// they sit in and run script, load a remote image, and inject an event handler.
const (
	evilPatch = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n" +
		" def add(a, b):\n" +
		"-    return a - b\n" +
		"+    return a + b  # </pre></span></details><script>window.pwned=1;document.title='pwned'</script>\n" +
		"+<img src=\"http://192.0.2.1/x.png\" onerror=\"window.pwned=2\"><a href=\"javascript:window.pwned=3\">x</a>\n"
	evilLog = "PASS test_add\n</pre><script>window.pwned=4</script><!-- <style>body{display:none}</style>\n" +
		"]]><svg onload=\"window.pwned=5\"></svg>&amp; &lt;ok&gt;\n"
)

var fixedTime = time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)

// goodPatch is a realistic one-file fix.
const goodPatch = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n" +
	"@@ -3,4 +3,4 @@\n \n def add(a, b):\n     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n"

// traceLines is a four-step trace that ends with task.finish.
func traceLines(t *testing.T, stop string) []byte {
	t.Helper()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []trace.Step{
		{Step: 1, Decision: &trace.Decision{Tool: "fs.read", Args: json.RawMessage(`{"path": "calc.py"}`)},
			Result:     &tool.Envelope{OK: true, Data: json.RawMessage(`{"path":"calc.py","size":158}`), Text: "\"\"\"A tiny calculator.\"\"\"\n\ndef add(a, b):\n", ObservedAt: at},
			DurationMS: 3, Session: &trace.SessionInfo{Session: "s-1", Goal: "Fix calc.add so that it returns a + b.", Policy: "scripted:reference"}},
		{Step: 2, Decision: &trace.Decision{Tool: "fs.read", Args: json.RawMessage(`{"path":"../secret"}`)},
			Result:     &tool.Envelope{OK: false, Data: json.RawMessage("null"), Error: &tool.Error{Code: tool.EPERM, Message: "../secret: path escapes the workspace"}, ObservedAt: at},
			DurationMS: 1},
		{Step: 3, Decision: &trace.Decision{Tool: "patch.apply", Args: json.RawMessage(`{"path":"calc.py","old":"a - b","new":"a + b"}`)},
			Result:     &tool.Envelope{OK: true, Data: json.RawMessage(`{"mode":"str_replace"}`), ObservedAt: at},
			DurationMS: 12},
		{Step: 4, Decision: &trace.Decision{Tool: "task.finish", Args: json.RawMessage(`{"summary":"fixed"}`)},
			Result: &tool.Envelope{OK: true, Data: json.RawMessage(`{"finished":true}`), ObservedAt: at}, Done: true,
			DurationMS: 2, End: &trace.SessionEnd{StopReason: stop, Detail: "finished by task.finish", Steps: 4, ToolCalls: 4}},
	}
	var b strings.Builder
	for _, s := range steps {
		line, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// fixture writes a results directory with four attempts and returns it with its
// report: calc-add #1 resolved (every file), calc-add #2 tampered (an attacker's
// patch and log), str-reverse #1 unresolved with no files at all, str-reverse #2
// an infrastructure error whose directory escapes the results directory.
func fixture(t *testing.T) (string, *Report) {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, name string, b []byte) {
		t.Helper()
		d := filepath.Join(dir, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := grade.Verdict{Resolved: true, PatchApplied: true, ApplyMethod: "strict", TamperPaths: []string{},
		FailToPass: grade.Split{Passed: []string{"test_add"}, Failed: []string{}},
		PassToPass: grade.Split{Passed: []string{"test_sub", "test_mul"}, Failed: []string{}}, Runs: 1, DurationMS: 3400}
	evil := grade.Verdict{Tampered: true, TamperPaths: []string{"tests/test_calc.py", "<b>conftest.py</b>"},
		Problems: []string{"patch touches protected paths <script>alert(1)</script>"}, DurationMS: 20}
	atts := []Attempt{
		{Task: "calc-add", Title: "Fix add", Attempt: 1, Dir: "calc-add/1", Resolved: true, StopReason: "done",
			Steps: 4, ToolCalls: 4, CostUSD: 0.0123, AgentMS: 1234, GradeMS: 3400, DurationMS: 4700, PatchBytes: len(goodPatch), Verdict: good},
		{Task: "calc-add", Title: "Fix add", Attempt: 2, Dir: "calc-add/2", Tampered: true, StopReason: "done",
			Steps: 4, ToolCalls: 4, CostUSD: 0.02, AgentMS: 2100, GradeMS: 20, PatchBytes: len(evilPatch), Verdict: evil},
		{Task: "str-reverse", Attempt: 1, Dir: "str-reverse/1", StopReason: "max_steps", Steps: 50, AgentMS: 61000},
		{Task: "str-reverse", Attempt: 2, Dir: "../outside", InfraError: "grade environment failed to start",
			Verdict: grade.Verdict{InfraError: "grade environment failed to start"}},
	}
	for _, a := range atts[:2] {
		v, _ := json.Marshal(a.Verdict)
		write(a.Dir, "grade.json", v)
		write(a.Dir, "trace.jsonl", traceLines(t, "done"))
	}
	write("calc-add/1", "patch.diff", []byte(goodPatch))
	write("calc-add/1", "test.log", []byte("test_add PASSED\ntest_sub PASSED\ntest_mul PASSED\n"))
	write("calc-add/2", "patch.diff", []byte(evilPatch))
	write("calc-add/2", "test.log", []byte(evilLog))
	if err := os.MkdirAll(filepath.Join(dir, "str-reverse/1"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, &Report{Run: "run-1", Suite: "builtin", Policy: "scripted:reference", StartedAt: fixedTime,
		FinishedAt: fixedTime.Add(83 * time.Second), DurationMS: 83000, Attempts: atts}
}
