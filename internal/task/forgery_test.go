package task

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestGoWitnessStopsInitForgery runs a patch whose init prints "--- PASS" for every
// test in the package and exits 0 before the testing package starts. go test
// reports every test as passed with exit status 0; only the missing witness line
// exposes it.
func TestGoWitnessStopsInitForgery(t *testing.T) {
	tk := builtinTask(t, "G01")
	r := runTask(t, tk, runOpts{patch: readTestdata(t, "G01/forge_init.patch")})
	if r.out.ExitCode != 0 {
		t.Fatalf("the forgery did not get exit status 0 (%d); this test proves nothing\n%s", r.out.ExitCode, r.log)
	}
	// Without the witness check the forged run looks resolved: the attack is real.
	naive, err := Parse(GoTestJSON, Output{ExitCode: 0, Stdout: r.out.Stdout})
	if err != nil {
		t.Fatalf("Parse without a nonce: %v", err)
	}
	for _, id := range tk.FailToPass {
		if naive.Outcome(id) != OutcomePass {
			t.Fatalf("the forged output does not claim %s passed; this test proves nothing\n%s", id, r.log)
		}
	}
	if !errors.Is(r.err, ErrResults) {
		t.Fatalf("Parse with the nonce = %v, want ErrResults", r.err)
	}
}

// TestResultsFileForgery covers the results file of the Python runner: a file left
// at the results path before the run (even one carrying the right nonce and all
// passes) makes the runner exit 2 without running anything, and that exit status
// contradicts the file; stdout forgery is covered by TestC01Candidates.
func TestResultsFileForgery(t *testing.T) {
	tk := builtinTask(t, "C01")
	forge := func(t *testing.T, results, nonce string) {
		var cases strings.Builder
		for _, id := range append(tk.FailToPass, tk.PassToPass...) {
			file, rest, _ := strings.Cut(id, "::")
			class, name, _ := strings.Cut(rest, "::")
			module := strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".")
			fmt.Fprintf(&cases, `<testcase classname="%s.%s" name="%s" file="%s"/>`, module, class, name, file)
		}
		xml := fmt.Sprintf(`<testsuites agentbox-nonce="%s"><testsuite>%s</testsuite></testsuites>`, nonce, cases.String())
		if err := os.WriteFile(results, []byte(xml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runTask(t, tk, runOpts{after: forge})
	if r.out.ExitCode != 2 {
		t.Fatalf("runner exit status %d with a results file already there, want 2\n%s", r.out.ExitCode, r.log)
	}
	forged, err := parseJUnit(r.out.ResultsFile, r.out.Nonce)
	if err != nil || !forged.clean() {
		t.Fatalf("the forged file does not parse as a clean run (%v); this test proves nothing", err)
	}
	if !errors.Is(r.err, ErrResults) {
		t.Fatalf("Parse = %v, want ErrResults", r.err)
	}
}
