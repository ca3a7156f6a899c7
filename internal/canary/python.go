package canary

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

//go:embed rewrite_python.py
var rewritePython string

// PyTest names one test function of a hidden Python module: its dotted module
// path (tests/test_x.py is tests.test_x), its class ("" for a module-level
// function) and its name.
type PyTest struct{ Module, Class, Name string }

// PyPlan records what RewritePython did: which tests each of the two runs holds
// as a canary (every other test it holds as it is).
type PyPlan struct {
	// Canary[i] are the tests run i holds as canaries; the other run holds them
	// as they are.
	Canary [2]map[PyTest]bool
	// Uncovered lists the tests that got no canary, with why.
	Uncovered []string
}

// PythonTestFile reports whether name is a module pytest or unittest collects
// tests from by default: test_*.py or *_test.py.
func PythonTestFile(name string) bool {
	base := path.Base(name)
	return strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py"))
}

// RewritePython makes the two copies of the hidden Python test modules files
// (name → source) that the grader runs, each in an environment of its own: every
// test whose check can be inverted (see the package documentation) is a canary
// in one copy, chosen at random, and as it is in the other, under its own name
// in both. A run therefore never holds a test and its canary together. python3
// is the interpreter that parses the modules (run isolated, -I -S: it imports
// nothing of the task's); it never imports or runs them. A module that does not
// parse, or is not UTF-8, is left as it is in both copies.
func RewritePython(ctx context.Context, python string, files map[string][]byte, rng *rand.Rand) ([2]map[string][]byte, PyPlan, error) {
	out := [2]map[string][]byte{{}, {}}
	plan := PyPlan{Canary: [2]map[PyTest]bool{{}, {}}}
	req := struct {
		Seed  uint64            `json:"seed"`
		Files map[string]string `json:"files"`
	}{rng.Uint64() >> 1, map[string]string{}}
	for name, src := range files {
		out[0][name], out[1][name] = src, src
		if utf8.Valid(src) {
			req.Files[name] = string(src)
		}
	}
	if len(req.Files) == 0 {
		return out, plan, nil
	}
	in, err := json.Marshal(req)
	if err != nil {
		return out, plan, err
	}
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-B", "-c", rewritePython)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = []string{"LANG=C.UTF-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		return out, plan, fmt.Errorf("canary: %s: %w: %s", python, err, bytes.TrimSpace(stderr.Bytes()))
	}
	type test struct {
		Class string  `json:"cls"`
		Name  string  `json:"name"`
		Edit  *[3]any `json:"edit"`
		Why   string  `json:"why"`
	}
	var resp map[string]struct {
		Error string `json:"error"`
		Tests []test `json:"tests"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return out, plan, fmt.Errorf("canary: read the rewrite: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(resp)) {
		r, src := resp[name], files[name]
		if r.Error != "" {
			plan.Uncovered = append(plan.Uncovered, fmt.Sprintf("%s: does not parse (%s)", name, r.Error))
			continue
		}
		module := strings.ReplaceAll(strings.TrimSuffix(name, ".py"), "/", ".")
		type edit struct {
			at, end int
			text    string
		}
		var edits [2][]edit
		for _, t := range r.Tests {
			id := PyTest{module, t.Class, t.Name}
			if t.Edit == nil {
				plan.Uncovered = append(plan.Uncovered, fmt.Sprintf("%s: %s", id, t.Why))
				continue
			}
			at, ok1 := t.Edit[0].(float64)
			end, ok2 := t.Edit[1].(float64)
			text, ok3 := t.Edit[2].(string)
			if !ok1 || !ok2 || !ok3 || at < 0 || end < at || int(end) > len(src) {
				return out, plan, fmt.Errorf("canary: the rewrite of %s gave a malformed edit %v", name, *t.Edit)
			}
			i := rng.IntN(2)
			plan.Canary[i][id] = true
			edits[i] = append(edits[i], edit{int(at), int(end), text})
		}
		for i := range 2 {
			slices.SortFunc(edits[i], func(a, b edit) int { return a.at - b.at })
			var b bytes.Buffer
			last := 0
			for _, e := range edits[i] {
				if e.at < last {
					return out, plan, fmt.Errorf("canary: the rewrite of %s gave overlapping edits", name)
				}
				b.Write(src[last:e.at])
				b.WriteString(e.text)
				last = e.end
			}
			b.Write(src[last:])
			out[i][name] = b.Bytes()
		}
	}
	return out, plan, nil
}

func (t PyTest) String() string {
	if t.Class != "" {
		return t.Module + "." + t.Class + "." + t.Name
	}
	return t.Module + "." + t.Name
}

// PyResult is one test a run reported: its TestKey's parts (the junit
// classname or unittest's module.Class, and the name with any parameters) and
// its outcome.
type PyResult struct {
	Class, Name string
	Outcome     Outcome
}

// canaryOf returns the test of p's run i that r is a result of, when that test
// is a canary there. A report's classname is the test's module (and class)
// path as the framework saw it, which may start higher or lower than the hidden
// file's path (a different root directory): the shorter must end the longer.
func (p PyPlan) canaryOf(i int, r PyResult) (PyTest, bool) {
	name, _, _ := strings.Cut(r.Name, "[")
	for t := range p.Canary[i] {
		if t.Name != name {
			continue
		}
		want := t.Module
		if t.Class != "" {
			want += "." + t.Class
		}
		if dottedSuffix(want, r.Class) || dottedSuffix(r.Class, want) {
			return t, true
		}
	}
	return PyTest{}, false
}

// dottedSuffix reports whether s ends with the dotted path suffix, whole
// components only, and suffix holds the module's last component at least.
func dottedSuffix(s, suffix string) bool {
	return suffix != "" && (s == suffix || strings.HasSuffix(s, "."+suffix))
}

// CheckPython reads the results of the two runs of RewritePython's copies (by
// test id) and returns each run's results without its canaries, and why they
// are forged: a canary that passed while the same test id (the same function,
// the same parameters) passed as it is in the other run; a canary the run did
// not report although it reported other tests and the other run reported the
// test as it is. A run that reported nothing (it did not get as far as running
// tests) proves nothing either way; its tests are missing from the results.
func CheckPython(p PyPlan, runs [2]map[string]PyResult) ([2]map[string]PyResult, []string) {
	var out [2]map[string]PyResult
	var forged []string
	canaries := [2]map[string]PyResult{{}, {}}
	reported := [2]map[PyTest]bool{{}, {}}
	for i := range 2 {
		out[i] = map[string]PyResult{}
		for id, r := range runs[i] {
			if t, ok := p.canaryOf(i, r); ok {
				canaries[i][id] = r
				reported[i][t] = true
				continue
			}
			out[i][id] = r
		}
	}
	for i := range 2 {
		other := out[1-i]
		for _, id := range slices.Sorted(maps.Keys(canaries[i])) {
			if canaries[i][id].Outcome == "pass" && other[id].Outcome == "pass" {
				forged = append(forged, fmt.Sprintf("canary %s (its check inverted) passed in run %d, and so did the test as it is in run %d", id, i+1, 2-i))
			}
		}
		if len(runs[i]) == 0 {
			continue
		}
		for _, t := range slices.SortedFunc(maps.Keys(p.Canary[i]), func(a, b PyTest) int { return strings.Compare(a.String(), b.String()) }) {
			if reported[i][t] {
				continue
			}
			for id, r := range other {
				if _, ok := (PyPlan{Canary: [2]map[PyTest]bool{{t: true}, {}}}).canaryOf(0, r); ok {
					forged = append(forged, fmt.Sprintf("canary %s ran in run %d but was not reported, while %s was reported in run %d", t, i+1, id, 2-i))
					break
				}
			}
		}
	}
	return out, forged
}
