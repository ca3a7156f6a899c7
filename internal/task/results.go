package task

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// Outcome is how one test ended.
type Outcome string

const (
	OutcomePass  Outcome = "pass"
	OutcomeSkip  Outcome = "skip"
	OutcomeFail  Outcome = "fail"
	OutcomeError Outcome = "error" // crashed, could not load, or not vouched for
)

// rank orders outcomes so that a test reported twice keeps the worse one: a forged
// "pass" next to a real "fail" never wins.
func (o Outcome) rank() int {
	switch o {
	case OutcomePass:
		return 0
	case OutcomeSkip:
		return 1
	case OutcomeFail:
		return 2
	}
	return 3
}

// Worse reports whether o is a worse outcome than than: pass < skip < fail < error.
func (o Outcome) Worse(than Outcome) bool { return o.rank() > than.rank() }

// Results are the outcomes of one run of a test command, by canonical test id.
type Results struct {
	Tests map[string]Outcome
	// Keys gives, for a reported id, the (class, name) key that the other forms of
	// its id reduce to (see Find): a junit testcase's classname and name, a
	// unittest test's module.Class and method, a Go test's name.
	Keys map[string]TestKey
}

// TestKey is what the forms of one test's id have in common: the dotted path of
// its class or module, and its name (with any parameters). pytest's node id
// tests/test_x.py::TestC::test_m[1], the dotted unittest id tests.test_x.TestC.test_m
// and Django's "test_m (tests.test_x.TestC)" have the key {tests.test_x.TestC,
// test_m}; a Go test's key is {"", TestName}.
type TestKey struct{ Class, Name string }

// Outcome returns the outcome of the test id, or "" if the run did not report it.
func (r Results) Outcome(id string) Outcome { return r.Tests[id] }

// IDs returns the reported test ids, sorted.
func (r Results) IDs() []string { return slices.Sorted(maps.Keys(r.Tests)) }

// clean reports whether at least one test ran and none failed or errored: what a
// zero exit status of the test command claims.
func (r Results) clean() bool {
	if len(r.Tests) == 0 {
		return false
	}
	for _, o := range r.Tests {
		if o == OutcomeFail || o == OutcomeError {
			return false
		}
	}
	return true
}

func (r *Results) add(id string, o Outcome) {
	if r.Tests == nil {
		r.Tests = map[string]Outcome{}
	}
	if prev, ok := r.Tests[id]; !ok || o.rank() > prev.rank() {
		r.Tests[id] = o
	}
}

// addKeyed adds a result with its key.
func (r *Results) addKeyed(id string, k TestKey, o Outcome) {
	r.add(id, o)
	if r.Keys == nil {
		r.Keys = map[string]TestKey{}
	}
	r.Keys[id] = k
}

// Find returns the outcome of each of ids that the run reported, under any of the
// forms of its id: the canonical id, or an id with the same TestKey (a pytest node
// id, a dotted unittest id, a Django-style id, a Go test name without its import
// path). An id that matches several reported tests gets the worst of their
// outcomes. An id missing from the map was not reported: the test did not run.
func (r Results) Find(ids []string) map[string]Outcome {
	byKey := map[TestKey][]string{}
	for id, k := range r.Keys {
		byKey[k] = append(byKey[k], id)
	}
	found := map[string]Outcome{}
	for _, id := range ids {
		if o, ok := r.Tests[id]; ok {
			found[id] = o
			continue
		}
		k, ok := ParseTestKey(id)
		if !ok {
			continue
		}
		for _, got := range byKey[k] {
			if o, seen := found[id]; !seen || r.Tests[got].Worse(o) {
				found[id] = r.Tests[got]
			}
		}
	}
	return found
}

// Output is what one run of a task's test command left for the grader.
type Output struct {
	ExitCode int
	// Stdout is the command's whole standard output (go-test-json, tap). A
	// truncated capture loses events and makes tests count as missing.
	Stdout []byte
	// Stderr is its whole standard error (unittest).
	Stderr []byte
	// ResultsFile is the content of the file named by $AGENTBOX_RESULTS (junit), or
	// nil if the run did not create it.
	ResultsFile []byte
	// Nonce is the value the grader passed in $AGENTBOX_NONCE to a witnessed task
	// (Task.Witnessed), which a junit results file must carry. When it is empty the
	// nonce and exit status checks are skipped: the results are read as the
	// framework wrote them (except go-test-json's exit status check: see Parse).
	Nonce string
}

// Parse reads the results of one run in the given format. With a nonce (a
// witnessed task), for junit and go-test-json it also checks that the exit status
// agrees with the results (zero exactly when at least one test ran and none failed
// or errored): a disagreement means agentbox's runner was bypassed or forged, and
// is an error. Without one the results are read as a native framework reports
// them, whatever its exit status (pytest exits 1 when an unrelated test fails),
// except go-test-json's, which is always checked (with canaries in, a contradiction
// is how a forgery shows: ResultsError.Contradiction).
// Every error is a *ResultsError: nothing in such a run may be trusted.
func Parse(format ResultFormat, out Output) (Results, error) {
	var (
		r   Results
		err error
	)
	switch format {
	case JUnit:
		if out.ResultsFile == nil {
			return Results{}, resultsErrorf(format, "the runner wrote no results file (exit status %d)", out.ExitCode)
		}
		if len(bytes.TrimSpace(out.ResultsFile)) == 0 {
			// The runner creates the file before it imports code under test.
			return Results{}, resultsErrorf(format, "the results file is empty: the runner did not finish (exit status %d)", out.ExitCode)
		}
		r, err = parseJUnit(out.ResultsFile, out.Nonce)
	case GoTestJSON:
		r, err = parseGoTestJSON(out.Stdout)
	case TAP:
		return parseTAP(out.Stdout)
	case Unittest:
		return parseUnittest(out.Stderr)
	case ExitCode:
		o := OutcomePass
		if out.ExitCode != 0 {
			o = OutcomeFail
		}
		return Results{Tests: map[string]Outcome{ExitCodeID: o}}, nil
	default:
		return Results{}, fmt.Errorf("parse results: unknown format %q", format)
	}
	if err != nil {
		return Results{}, err
	}
	// go test's exit status is checked without a nonce too: with canaries in, a
	// contradiction is the grader's forgery signal.
	if (out.Nonce != "" || format == GoTestJSON) && r.clean() != (out.ExitCode == 0) {
		err := resultsErrorf(format, "exit status %d contradicts the results (%d tests, clean=%v)", out.ExitCode, len(r.Tests), r.clean())
		err.(*ResultsError).Contradiction = true
		return Results{}, err
	}
	return r, nil
}
