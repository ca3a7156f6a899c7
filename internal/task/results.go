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
}

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

// Output is what one run of a task's test command left for the grader.
type Output struct {
	ExitCode int
	// Stdout is the command's whole standard output (go-test-json, tap). A
	// truncated capture loses events and makes tests count as missing.
	Stdout []byte
	// ResultsFile is the content of the file named by $AGENTBOX_RESULTS (junit), or
	// nil if the run did not create it.
	ResultsFile []byte
	// Nonce is the value the grader passed in $AGENTBOX_NONCE, which a junit results
	// file must carry. When it is empty the check is skipped: only for running tasks
	// by hand.
	Nonce string
}

// Parse reads the results of one run in the given format. For junit and
// go-test-json it also checks that the exit status agrees with the results (zero
// exactly when at least one test ran and none failed or errored), as SWE-bench's
// harness does; a disagreement means a runner was bypassed or forged, and is an
// error. Every error is a *ResultsError: nothing in such a run may be trusted.
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
	if r.clean() != (out.ExitCode == 0) {
		err := resultsErrorf(format, "exit status %d contradicts the results (%d tests, clean=%v)", out.ExitCode, len(r.Tests), r.clean())
		err.(*ResultsError).Contradiction = true
		return Results{}, err
	}
	return r, nil
}
