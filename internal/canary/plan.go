package canary

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Plan records what a rewrite did, by test name (without package).
type Plan struct {
	// Real maps each hidden test's new names to its original name.
	Real map[string]string
	// Canary maps each canary's name to the original name of the test it copies.
	Canary map[string]string
	// Uncovered lists the original names of the tests that got no canary (each
	// is in Real twice, once per copy).
	Uncovered []string
}

// Merge adds q's tests to p.
func (p *Plan) Merge(q Plan) {
	if p.Real == nil {
		p.Real, p.Canary = map[string]string{}, map[string]string{}
	}
	maps.Copy(p.Real, q.Real)
	maps.Copy(p.Canary, q.Canary)
	p.Uncovered = append(p.Uncovered, q.Uncovered...)
}

// Outcome is what a run reported for one test id: "pass", "fail", "skip", "error".
type Outcome = string

// rank orders outcomes as task.Outcome.Worse does.
func rank(o Outcome) int {
	switch o {
	case "pass":
		return 0
	case "skip":
		return 1
	case "fail":
		return 2
	}
	return 3
}

// Check maps results (test id → outcome, ids "PKG::Name" or "PKG::Name/sub") of
// the runs of both rewritten copies (their names are distinct) back to the original names, and lists why they are
// forged: a canary that passed along with its real test; a canary or renamed test missing while some hidden
// test passed and none failed (a build failure reports none of them, a test binary
// that panics reports the failing test and stops; neither forges anything); a test
// reported under a hidden test's original name, which the run did not have. The
// canaries are left out of the returned results.
func Check(p Plan, results map[string]Outcome) (map[string]Outcome, []string) {
	out := map[string]Outcome{}
	var forged []string
	seen := map[string]bool{}
	originals := map[string]bool{}
	for _, o := range p.Real {
		originals[o] = true
	}
	passed, failed := false, false
	var canaryPassed []string
	realPassed := map[string]bool{} // by original name
	for _, id := range slices.Sorted(maps.Keys(results)) {
		o := results[id]
		pkg, name, ok := strings.Cut(id, "::")
		if !ok {
			out[id] = o
			continue
		}
		top, sub, _ := strings.Cut(name, "/")
		switch {
		case p.Canary[top] != "":
			seen[top] = true
			if o == "pass" && sub == "" {
				canaryPassed = append(canaryPassed, top)
			}
		case p.Real[top] != "":
			seen[top] = true
			switch o {
			case "pass":
				passed = true
				if sub == "" {
					realPassed[p.Real[top]] = true
				}
			case "fail", "error":
				failed = true
			}
			orig := pkg + "::" + p.Real[top]
			if sub != "" {
				orig += "/" + sub
			}
			if prev, ok := out[orig]; !ok || rank(o) > rank(prev) {
				out[orig] = o // a test in both copies counts by its worse outcome
			}
		case originals[top]:
			forged = append(forged, fmt.Sprintf("%s was reported, but the run had no test of that name", id))
		default:
			out[id] = o
		}
	}
	// A canary fails for every implementation that passes its real test; when the
	// real test fails, the canary may pass and proves nothing.
	for _, c := range canaryPassed {
		if realPassed[p.Canary[c]] {
			forged = append(forged, fmt.Sprintf("canary %s (an inverted copy of %s) passed, and so did %s", c, p.Canary[c], p.Canary[c]))
		}
	}
	if passed && !failed {
		for _, names := range []map[string]string{p.Real, p.Canary} {
			for _, n := range slices.Sorted(maps.Keys(names)) {
				if !seen[n] {
					forged = append(forged, fmt.Sprintf("%s (for %s) ran but was not reported", n, names[n]))
				}
			}
		}
	}
	return out, forged
}
