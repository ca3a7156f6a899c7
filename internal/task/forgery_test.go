package task

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestJudgeIgnoresInitForgery runs a patch whose init prints "--- PASS" for every
// test in the package and exits 0 before the testing package starts. A plain
// `go test -json` run reports every test as passed with exit status 0; under the
// judge the same init runs in the worker, whose output is not the results, and no
// check passes.
func TestJudgeIgnoresInitForgery(t *testing.T) {
	tk := builtinTask(t, "G01")
	patch := readTestdata(t, "G01/forge_init.patch")
	plain := *tk
	plain.TestCommand, plain.ResultFormat, plain.Hidden = []string{"go", "test", "-json", "-count=1", "./..."}, GoTestJSON, t.TempDir()
	r := runTask(t, &plain, runOpts{patch: patch})
	if r.err != nil || r.out.ExitCode != 0 || len(r.res.Tests) == 0 || !r.res.clean() {
		t.Fatalf("the forgery does not pass for a clean plain run (exit %d, %v, %v); this test proves nothing\n%s", r.out.ExitCode, r.res.Tests, r.err, r.log)
	}
	r = runTask(t, tk, runOpts{patch: patch})
	if r.err != nil {
		t.Fatalf("Parse: %v\n%s", r.err, r.log)
	}
	for _, id := range append(tk.FailToPass, tk.PassToPass...) {
		if o := r.res.Outcome(id); o == OutcomePass {
			t.Errorf("%s passed under the judge\n%s", id, r.log)
		}
	}
}

// TestResultsFileForgery covers the results file: a file left at the results path
// before the run (even one carrying the right nonce and all passes) makes the judge
// fail before it runs anything, and that exit status contradicts the file.
func TestResultsFileForgery(t *testing.T) {
	tk := builtinTask(t, "C01")
	forge := func(t *testing.T, results, nonce string) {
		var cases strings.Builder
		for _, id := range append(tk.FailToPass, tk.PassToPass...) {
			file, name, _ := strings.Cut(id, "::")
			fmt.Fprintf(&cases, `<testcase classname="%s" name="%s" file="%s"/>`, strings.TrimSuffix(file, ".py"), name, file)
		}
		xml := fmt.Sprintf(`<testsuites agentbox-nonce="%s"><testsuite>%s</testsuite></testsuites>`, nonce, cases.String())
		if err := os.WriteFile(results, []byte(xml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runTask(t, tk, runOpts{after: forge})
	if r.out.ExitCode == 0 {
		t.Fatalf("judge exit status 0 with a results file already there\n%s", r.log)
	}
	forged, err := parseJUnit(r.out.ResultsFile, r.out.Nonce)
	if err != nil || !forged.clean() || len(forged.Tests) != len(tk.FailToPass)+len(tk.PassToPass) {
		t.Fatalf("the forged file does not parse as a clean run (%v); this test proves nothing", err)
	}
	if !errors.Is(r.err, ErrResults) {
		t.Fatalf("Parse = %v, want ErrResults", r.err)
	}
}
