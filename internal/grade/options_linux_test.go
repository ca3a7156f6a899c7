package grade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/env/envtest"
)

// TestFuzzyApply grades calc's reference moved by two lines and with a tab for the
// indentation of a context line: strictly it does not apply, with the fallbacks it
// resolves and says what they did; StrictApply refuses it.
func TestFuzzyApply(t *testing.T) {
	m := envtest.New(t)
	tk := builtin(t, "calc")
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	moved := string(ref)
	var hdr string
	for _, l := range strings.Split(moved, "\n") {
		if strings.HasPrefix(l, "@@ ") {
			hdr = l
			break
		}
	}
	if hdr == "" {
		t.Fatalf("reference has no hunk:\n%s", ref)
	}
	// "@@ -4,7 +4,7 @@" → "@@ -2,7 +2,7 @@" (whatever the numbers, two lines up).
	var o1, n1, o2, n2 int
	if _, err := sscanHunk(hdr, &o1, &n1, &o2, &n2); err != nil || o1 < 3 {
		t.Fatalf("hunk header %q: %v", hdr, err)
	}
	moved = strings.Replace(moved, hdr, strings.Replace(strings.Replace(hdr,
		"-"+itoa(o1)+",", "-"+itoa(o1-2)+",", 1), "+"+itoa(o2)+",", "+"+itoa(o2-2)+",", 1), 1)

	v := gradeIt(t, m, tk, []byte(moved), Options{StrictApply: true})
	if v.PatchApplied || v.Resolved || len(v.Problems) == 0 {
		t.Fatalf("strict apply of a moved patch: %s", dump(v))
	}
	log := filepath.Join(t.TempDir(), "test.log")
	v = gradeIt(t, m, tk, []byte(moved), Options{LogFile: log})
	if !v.Resolved || v.ApplyMethod != "fuzzy" || len(v.ApplyNotes) == 0 || !strings.Contains(v.ApplyNotes[0], "+2 lines") {
		t.Fatalf("fuzzy apply of a moved patch: %s", dump(v))
	}
	if v.Logs != log {
		t.Errorf("Logs = %q, want %q", v.Logs, log)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "=== test run: python3") || !strings.Contains(string(data), "test_add") {
		t.Errorf("test log lacks the run's heading or output:\n%s", data)
	}
}

// TestReruns runs the tests three times: a stable resolution stays resolved with
// no flaky test, and the log holds every run, each in a fresh environment.
func TestReruns(t *testing.T) {
	m := envtest.New(t)
	tk := builtin(t, "C02")
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "test.log")
	v := gradeIt(t, m, tk, ref, Options{Reruns: 2, LogFile: log})
	if !v.Resolved || v.Runs != 3 || len(v.Flaky) != 0 {
		t.Fatalf("reference with 2 reruns: %s", dump(v))
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "=== test rerun 2:") || strings.Count(string(data), "in a fresh environment") != 2 {
		t.Errorf("the log lacks the third run, or a rerun's fresh environment:\n%s", data)
	}
	// J01's judge deletes its checks before it starts the code under test: each
	// run gets them afresh.
	j := builtin(t, "J01")
	ref, err = j.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	if v := gradeIt(t, m, j, ref, Options{Reruns: 1}); !v.Resolved || v.Runs != 2 {
		t.Fatalf("J01 reference with a rerun: %s", dump(v))
	}
}

// TestSameVerdictTwice grades seed 000's C01 candidates twice each: the verdicts
// are identical but for the time taken and the judge's seed, which is fresh for
// every grade.
func TestSameVerdictTwice(t *testing.T) {
	m := envtest.New(t)
	tk := builtin(t, "C01")
	for _, name := range []string{"C01/floor.patch", "C01/ceil.patch", "C01/delete_public_tests.patch"} {
		patch := readTestdata(t, name)
		a, b := gradeIt(t, m, tk, patch, Options{}), gradeIt(t, m, tk, patch, Options{})
		if a.Seed == b.Seed || a.Seed <= 0 || b.Seed <= 0 {
			t.Errorf("%s: seeds %d and %d, want two fresh positive ones", name, a.Seed, b.Seed)
		}
		a.DurationMS, b.DurationMS, a.Seed, b.Seed = 0, 0, 0, 0
		if dump(a) != dump(b) {
			t.Errorf("%s graded twice:\n%s\n%s", name, dump(a), dump(b))
		}
	}
}

// TestJudgeAllowsOrdinaryCode grades a fix of calc that uses the standard
// modules that take their caller's frame (namedtuple, enum, typing, dataclasses,
// logging) and formats a traceback: nothing may take that for forgery.
func TestJudgeAllowsOrdinaryCode(t *testing.T) {
	m := envtest.New(t)
	patch, err := os.ReadFile(filepath.Join("testdata", "calc-ordinary-stdlib.diff"))
	if err != nil {
		t.Fatal(err)
	}
	v := gradeIt(t, m, builtin(t, "calc"), patch, Options{})
	if !v.Resolved {
		t.Fatalf("an ordinary fix: %s", dump(v))
	}
}

// TestRerunsStartFresh: each rerun starts from the pristine repository in a new
// environment, so nothing a run leaves behind reaches the next (issue 12: reruns
// shared one environment).
//   - A fix whose module leaves a file beside itself, and answers wrongly when it
//     finds one, was graded flaky and not resolved: the rerun saw the first run's
//     file. Each run now finds none.
//   - A wrong fix whose module made the tests directory unwritable turned "not
//     resolved" into infra_error, which the rate left out: copying the hidden
//     tests in for the rerun failed. It is now unresolved, like its first run.
func TestRerunsStartFresh(t *testing.T) {
	m := envtest.New(t)
	tk := builtin(t, "C02")
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	marker := string(ref) + `diff --git a/orders_state.py b/orders_state.py
new file mode 100644
--- /dev/null
+++ b/orders_state.py
@@ -0,0 +1,5 @@
+import os
+
+MARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "left-behind.txt")
+LEFT = os.path.exists(MARK)
+open(MARK, "w").close()
`
	marker = strings.Replace(marker, "+    return [order for order in orders if _is_active(order)]",
		"+    import orders_state\n+    if orders_state.LEFT:\n+        return orders\n+    return [order for order in orders if _is_active(order)]", 1)
	marker = strings.Replace(marker, "@@ -8,12 +8,9 @@", "@@ -8,12 +8,12 @@", 1)
	v := gradeIt(t, m, tk, []byte(marker), Options{Reruns: 2})
	if !v.Resolved || v.Runs != 3 || len(v.Flaky) != 0 {
		t.Errorf("a fix that leaves a file behind, with 2 reruns: want resolved in 3 runs, none flaky: %s", dump(v))
	}

	locked := `diff --git a/orders.py b/orders.py
--- a/orders.py
+++ b/orders.py
@@ -1,4 +1,8 @@
 """Order queries used by the order dashboard."""
+import os
+
+# The hidden tests are copied into tests/ before every run.
+os.chmod(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"), 0o500)
 
 
 def active_orders(orders):
`
	v = gradeIt(t, m, tk, []byte(locked), Options{Reruns: 2})
	if v.Outcome != Unresolved || v.InfraError != "" || v.Resolved {
		t.Errorf("a wrong fix that locks the tests directory, with 2 reruns: want unresolved: %s", dump(v))
	}
}
