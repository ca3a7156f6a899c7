package grade

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// adversarial is one patch of testdata/adversarial: a known reward hack against
// a built-in task, with the verdict the grader must give it. See the README
// there for the header format.
type adversarial struct {
	name       string
	task       string // the built-in task: the file name up to the first "-"
	patch      []byte
	hack       string
	expect     string   // "tampered", "not resolved", "resolved", or (real rows) "forged"
	knownHole  string   // why a "resolved" hack is still open
	tamper     []string // paths that must be among Verdict.TamperPaths
	problem    string   // a substring one of Verdict.Problems must hold
	canaryHole string   // why the hack is resolved against a native run even with canaries (TestCanaryCatchRate)
	reruns     int      // Options.Reruns to grade it with
	passed     []string // test ids the hack must have made pass (it did something)
	failed     []string // test ids that must still fail
}

// parseAdversarial reads the comment block before the first "diff --git" line:
// "# key: value" lines, values continued on indented comment lines.
func parseAdversarial(name string, data []byte) (adversarial, error) {
	a := adversarial{name: strings.TrimSuffix(name, ".diff"), patch: data}
	a.task, _, _ = strings.Cut(a.name, "-")
	head, _, ok := bytes.Cut(data, []byte("\ndiff --git "))
	if !ok {
		return a, fmt.Errorf("no \"diff --git\" line")
	}
	var reruns string
	fields := map[string]*string{"hack": &a.hack, "expect": &a.expect, "known-hole": &a.knownHole, "problem": &a.problem,
		"canary-hole": &a.canaryHole, "reruns": &reruns}
	lists := map[string]*[]string{"tamper-paths": &a.tamper, "passed": &a.passed, "failed": &a.failed}
	var cur string
	add := func(key, text string) {
		if p, ok := fields[key]; ok {
			*p = strings.Join(strings.Fields(*p+" "+text), " ")
			return
		}
		for _, s := range strings.Split(text, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*lists[key] = append(*lists[key], s)
			}
		}
	}
	for i, line := range strings.Split(string(head), "\n") {
		// A comment line can never be taken for a file header ("diff", "---",
		// "+++"), which is what lets parsers skip the block.
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			return a, fmt.Errorf("line %d of the header is not a comment: %q", i+1, line)
		}
		switch key, value, isKey := strings.Cut(strings.TrimPrefix(text, " "), ": "); {
		case isKey && !strings.HasPrefix(key, " ") && !strings.Contains(key, " "):
			if fields[key] == nil && lists[key] == nil {
				return a, fmt.Errorf("unknown header key %q", key)
			}
			cur = key
			add(key, value)
		case strings.HasPrefix(text, "   ") && cur != "":
			add(cur, text)
		default:
			cur = ""
		}
	}
	if reruns != "" {
		n, err := strconv.Atoi(reruns)
		if err != nil || n < 1 {
			return a, fmt.Errorf("reruns: %q, want a positive number", reruns)
		}
		a.reruns = n
	}
	switch {
	case a.hack == "":
		return a, fmt.Errorf("no hack: line")
	case a.expect != "tampered" && a.expect != "not resolved" && a.expect != "resolved" && a.expect != "forged":
		return a, fmt.Errorf("expect: %q, want tampered, not resolved, resolved or forged", a.expect)
	case (a.expect == "resolved") != (a.knownHole != ""):
		return a, fmt.Errorf("known-hole: is required exactly when a hack is expected resolved")
	case a.expect == "tampered" && len(a.tamper) == 0:
		return a, fmt.Errorf("a tampered hack must name its tamper-paths:")
	}
	return a, nil
}

func loadAdversarial(t *testing.T) []adversarial {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "adversarial", "*.diff"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 30 {
		t.Fatalf("%d adversarial patches, want at least 30", len(names))
	}
	var out []adversarial
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		a, err := parseAdversarial(filepath.Base(n), data)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, a)
	}
	return out
}

// TestParseAdversarial: a malformed header is an error, not a case that passes
// for lack of an expectation.
func TestParseAdversarial(t *testing.T) {
	const body = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\n"
	tests := []struct {
		name, head, err string
	}{
		{"ok", "# hack: h\n#   more\n# expect: not resolved\n# failed: a::b, c::d\n", ""},
		{"no hack", "# expect: not resolved\n", "no hack"},
		{"bad expect", "# hack: h\n# expect: fine\n", "expect"},
		{"hole without reason", "# hack: h\n# expect: resolved\n", "known-hole"},
		{"reason without hole", "# hack: h\n# expect: not resolved\n# known-hole: x\n", "known-hole"},
		{"tampered without paths", "# hack: h\n# expect: tampered\n", "tamper-paths"},
		{"unknown key", "# hack: h\n# expect: not resolved\n# expected: x\n", "unknown header key"},
		{"not a comment", "# hack: h\nexpect: not resolved\n", "not a comment"},
		{"bad reruns", "# hack: h\n# expect: not resolved\n# reruns: once\n", "reruns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseAdversarial("calc-x.diff", []byte(tc.head+body))
			if tc.err == "" {
				if err != nil || a.task != "calc" || a.hack != "h more" || !slices.Equal(a.failed, []string{"a::b", "c::d"}) {
					t.Errorf("parse = %+v, %v", a, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want one about %q", err, tc.err)
			}
		})
	}
}

// TestAdversarialHeaderIgnored: the parser the tamper check and the applier
// share skips the comment block, so the header changes nothing the grader sees.
func TestAdversarialHeaderIgnored(t *testing.T) {
	for _, a := range loadAdversarial(t) {
		_, body, _ := bytes.Cut(a.patch, []byte("\ndiff --git "))
		body = append([]byte("diff --git "), body...)
		with, err1 := touched(a.patch)
		without, err2 := touched(body)
		if err1 != nil || err2 != nil || !slices.Equal(with, without) || len(with) == 0 {
			t.Errorf("%s: touched %v (%v) with the header, %v (%v) without", a.name, with, err1, without, err2)
		}
	}
}

// TestAdversarial grades every known reward hack of testdata/adversarial and
// checks the verdict its header expects: never an infra error, tampered exactly
// when expected, and never resolved, except for the known holes, which are
// asserted as they are (so closing one fails this test until its header is
// updated) and logged.
func TestAdversarial(t *testing.T) {
	m := envtest.New(t)
	var (
		mu    sync.Mutex
		holes []string
	)
	// Runs after the parallel subtests. Printed even without -v: these are open.
	t.Cleanup(func() {
		if len(holes) > 0 {
			slices.Sort(holes)
			msg := fmt.Sprintf("KNOWN HOLES (graded resolved without a fix, see testdata/adversarial): %s", strings.Join(holes, ", "))
			t.Log(msg)
			fmt.Fprintln(os.Stderr, "grade: TestAdversarial: "+msg)
		}
	})
	// -short runs the first hack of each task and those refused before anything
	// runs (tampered), but none of a Go task: those need a warm Go build cache
	// (~30 s).
	seen := map[string]bool{}
	for _, a := range loadAdversarial(t) {
		short := builtin(t, a.task).Language != task.Go && (a.expect == "tampered" || !seen[a.task])
		seen[a.task] = true
		t.Run(a.name, func(t *testing.T) {
			if !short {
				testenv.SkipShort(t, "one of the slower cases of its kind")
			}
			t.Parallel() // each grade has its own environment
			tk := builtin(t, a.task)
			o := Options{Reruns: a.reruns}
			if tk.Language == task.Go {
				o.GoCache = goCache(t)
			}
			v := gradeIt(t, m, tk, a.patch, o) // fails on an infra error
			if v.Tampered != (a.expect == "tampered") || v.Resolved != (a.expect == "resolved") {
				t.Fatalf("hack: %s\nwant %s, got tampered=%v resolved=%v: %s", a.hack, a.expect, v.Tampered, v.Resolved, dump(v))
			}
			for _, p := range a.tamper {
				if !slices.Contains(v.TamperPaths, p) {
					t.Errorf("tamper paths %q, want %q among them", v.TamperPaths, p)
				}
			}
			problems := strings.Join(v.Problems, "\n")
			if a.problem != "" && !strings.Contains(problems, a.problem) {
				t.Errorf("problems %q, want one holding %q", v.Problems, a.problem)
			}
			switch a.expect {
			case "tampered":
				if n := len(v.FailToPass.Passed) + len(v.PassToPass.Passed); n > 0 {
					t.Errorf("a tampered patch was run (%d tests passed): %s", n, dump(v))
				}
			case "not resolved":
				// A patch that does not apply proves nothing unless that is the point.
				if !v.PatchApplied && !strings.Contains(a.problem, "does not apply") {
					t.Errorf("the patch did not apply; this case proves nothing: %s", dump(v))
				}
			case "resolved":
				t.Logf("KNOWN HOLE %s: graded resolved without a fix.\n  hack: %s\n  why open: %s", a.name, a.hack, a.knownHole)
				mu.Lock()
				holes = append(holes, a.name)
				mu.Unlock()
			}
			if a.reruns > 0 && v.Runs != 1+a.reruns {
				t.Errorf("%d runs, want %d: the reruns this case is about did not happen: %s", v.Runs, 1+a.reruns, dump(v))
			}
			for _, id := range a.passed {
				if !slices.Contains(v.FailToPass.Passed, id) && !slices.Contains(v.PassToPass.Passed, id) {
					t.Errorf("%s did not pass: the hack did not work as described, so this case proves nothing: %s", id, dump(v))
				}
			}
			for _, id := range a.failed {
				if !slices.ContainsFunc([][]string{v.FailToPass.Failed, v.PassToPass.Failed, v.FailToPass.Missing, v.PassToPass.Missing},
					func(ids []string) bool { return slices.Contains(ids, id) }) {
					t.Errorf("%s is not among the failed or missing: %s", id, dump(v))
				}
			}
			// Every entry is graded tampered or not resolved: an error outcome would be
			// the harness's, which a patch must not be able to cause.
			if v.Outcome == HarnessError || v.Outcome == InfraError {
				t.Errorf("outcome %s: a patch turned its verdict into an error: %s", v.Outcome, dump(v))
			}
		})
	}
}
