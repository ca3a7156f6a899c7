package task

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
	"sync"
)

var (
	// unittestLineRE matches the start of a test's line in unittest's verbose log:
	// "test_x (module.Class.test_x) ... " (Python 3.11+) or
	// "test_x (module.Class) ... " (before), the rest of the line after it. With
	// a docstring the description line comes between, and " ... " ends that one.
	unittestLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([^\s()]+) \(([\w.]+)\)(?: \.\.\. (.*))?$`) })
	// unittestSummaryRE matches the headers of the failure report at the end:
	// "FAIL: test_x (module.Class.test_x)", "ERROR: ..." (with a subtest's
	// parameters after it).
	unittestSummaryRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(FAIL|ERROR|UNEXPECTED SUCCESS): ([^\s()]+) \(([\w.]+)\)`)
	})
)

// parseUnittest reads the verbose log (-v) of Python's unittest runner, as
// `python -m unittest -v` and Django's runtests.py --verbosity 2 print it on
// standard error. The canonical id of a test is module.Class.name; its TestKey
// lets Django-style ids ("name (module.Class)") find it. A result word that the
// test's own output pushed onto a later line is found there; the failure report at
// the end ("FAIL: name (module.Class.name)") confirms failures, so a test whose
// line was garbled still counts as failed. "expected failure" counts as a pass and
// "unexpected success" as a failure, as unittest itself counts them.
func parseUnittest(data []byte) (Results, error) {
	var r Results
	var pending *TestKey // a test whose line has not shown its result yet
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	record := func(k TestKey, word string) bool {
		o, ok := unittestOutcome(word)
		if ok {
			r.addKeyed(k.Class+"."+k.Name, k, o)
		}
		return ok
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := unittestSummaryRE().FindStringSubmatch(line); m != nil {
			k := unittestKey(m[2], m[3])
			o := OutcomeFail
			if m[1] == "ERROR" {
				o = OutcomeError
			}
			r.addKeyed(k.Class+"."+k.Name, k, o)
			continue
		}
		if m := unittestLineRE().FindStringSubmatch(line); m != nil {
			k := unittestKey(m[1], m[2])
			pending = &k
			if m[3] != "" && record(k, m[3]) {
				pending = nil
			}
			continue
		}
		if pending == nil {
			continue
		}
		// A docstring line ending in " ... RESULT", or the result on a line of its own
		// after the test's output.
		if _, rest, ok := strings.Cut(line, " ... "); ok && record(*pending, rest) {
			pending = nil
		} else if record(*pending, line) {
			pending = nil
		}
	}
	if err := sc.Err(); err != nil {
		return Results{}, resultsErrorf(Unittest, "reading output: %v", err)
	}
	return r, nil
}

func unittestKey(name, where string) TestKey {
	return TestKey{Class: strings.TrimSuffix(where, "."+name), Name: name}
}

// unittestOutcome maps the result word of a verbose line to an outcome.
func unittestOutcome(word string) (Outcome, bool) {
	word = strings.TrimSpace(word)
	switch {
	case word == "ok" || word == "expected failure":
		return OutcomePass, true
	case word == "FAIL" || word == "unexpected success":
		return OutcomeFail, true
	case word == "ERROR":
		return OutcomeError, true
	case strings.HasPrefix(word, "skipped"):
		return OutcomeSkip, true
	}
	return "", false
}
