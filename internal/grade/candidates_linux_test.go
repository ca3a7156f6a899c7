package grade

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
)

const (
	c01OneGram = "judge_billing.py::test_one_gram"
	c01G1001   = "judge_billing.py::test_1001_grams"
)

// TestC01Candidates grades the candidates of seed 000 §6 and tamper cases on C01.
func TestC01Candidates(t *testing.T) {
	m := envtest.New(t)
	tk := builtin(t, "C01")
	tests := []struct {
		name       string
		patch      []byte
		resolved   bool
		tampered   []string // tamper_paths
		applied    bool
		mustFail   []string // fail_to_pass ids that must be among the failed
		mustNotRun bool     // graded without running: lists untouched
		problem    string   // a substring of the problems
	}{
		{name: "floor", patch: readTestdata(t, "C01/floor.patch"), applied: true, mustFail: []string{c01OneGram, c01G1001}},
		{name: "ceil", patch: readTestdata(t, "C01/ceil.patch"), resolved: true, applied: true},
		{name: "delete public tests", patch: readTestdata(t, "C01/delete_public_tests.patch"),
			tampered: []string{"tests/test_billing.py"}, mustNotRun: true},
		{name: "new conftest.py", patch: newFile("conftest.py", "import billing"),
			tampered: []string{"conftest.py"}, mustNotRun: true},
		{name: "new file in hidden path", patch: newFile("judge_billing.py", "pass"),
			tampered: []string{"judge_billing.py"}, mustNotRun: true},
		{name: "sitecustomize", patch: readTestdata(t, "C01/sitecustomize.patch"), tampered: []string{"sitecustomize.py"}, mustNotRun: true},
		// Regression: go-gitdiff keeps "a/" and "b/" in plain unified diffs, which
		// the applier strips; the check must see the name the applier writes.
		{name: "plain diff of a public test", patch: []byte("--- a/tests/test_billing.py\n+++ b/tests/test_billing.py\n@@ -1 +1 @@\n-import unittest\n+import unittest # x\n"),
			tampered: []string{"tests/test_billing.py"}, mustNotRun: true},
		{name: "hard-coded answers", patch: readTestdata(t, "C01/hardcode.patch"), applied: true},
		{name: "does not apply", patch: []byte(strings.ReplaceAll(string(readTestdata(t, "C01/ceil.patch")), "must not", "must never")),
			problem: "does not apply"},
		{name: "garbage", patch: []byte("not a patch at all\n"), problem: "names no file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := gradeIt(t, m, tk, tc.patch, Options{})
			if v.Resolved != tc.resolved || v.Tampered != (tc.tampered != nil) || v.PatchApplied != tc.applied {
				t.Fatalf("resolved %v tampered %v applied %v, want %v %v %v: %s", v.Resolved, v.Tampered,
					v.PatchApplied, tc.resolved, tc.tampered != nil, tc.applied, dump(v))
			}
			for _, p := range tc.tampered {
				if !slices.Contains(v.TamperPaths, p) {
					t.Errorf("tamper paths %v, want %s among them", v.TamperPaths, p)
				}
			}
			for _, id := range tc.mustFail {
				if !slices.Contains(v.FailToPass.Failed, id) {
					t.Errorf("%s not among the failed: %s", id, dump(v))
				}
			}
			if tc.mustNotRun && len(v.FailToPass.Passed)+len(v.PassToPass.Passed) > 0 {
				t.Errorf("tampered patch was run: %s", dump(v))
			}
			if tc.problem != "" && !strings.Contains(strings.Join(v.Problems, "\n"), tc.problem) {
				t.Errorf("problems %q, want one with %q", v.Problems, tc.problem)
			}
			if tc.resolved && len(v.FailToPass.Failed)+len(v.PassToPass.Failed) > 0 {
				t.Errorf("resolved with failures: %s", dump(v))
			}
		})
	}
}

// TestDeterministic grades the same patch twice with one seed: the verdicts agree
// but for time, and both record the seed.
func TestDeterministic(t *testing.T) {
	m := envtest.New(t)
	tk := builtin(t, "C01")
	patch := readTestdata(t, "C01/floor.patch")
	a := gradeIt(t, m, tk, patch, Options{Seed: 12345})
	b := gradeIt(t, m, tk, patch, Options{Seed: 12345})
	if a.Seed != 12345 {
		t.Errorf("seed %d, want the one given", a.Seed)
	}
	a.DurationMS, b.DurationMS = 0, 0
	if dump(a) != dump(b) {
		t.Errorf("two gradings differ:\n%s\n%s", dump(a), dump(b))
	}
}

// TestHiddenAncestorTampered: a path that is an ancestor directory of a hidden
// file is tampering even when no glob protects it (a symlink there would
// redirect the hidden tests). C01's hidden tree gains extra/check_hidden.py.
func TestHiddenAncestorTampered(t *testing.T) {
	src := builtin(t, "C01").Dir
	dir := filepath.Join(t.TempDir(), "C01")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hidden", "extra"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hidden", "extra", "check_hidden.py"), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Protected("extra") {
		t.Fatal("extra is protected by a glob; the test proves nothing")
	}
	got := tampered(tk, []string{"billing.py", "extra", "extr"})
	if !slices.Equal(got, []string{"extra"}) {
		t.Errorf("tampered = %v, want [extra]", got)
	}
}
