package task

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseJUnit(t *testing.T) {
	const nonce = "N0NCE"
	doc := func(attrs, body string) []byte {
		return []byte(`<?xml version="1.0"?><testsuites ` + attrs + `><testsuite>` + body + `</testsuite></testsuites>`)
	}
	ok := `agentbox-nonce="N0NCE"`
	tests := []struct {
		name string
		data []byte
		exit int
		want map[string]Outcome
		err  string
	}{
		{
			name: "outcomes and ids",
			data: doc(ok, `<testcase classname="tests.test_a.ATest" name="test_pass" file="tests/test_a.py"/>`+
				`<testcase classname="tests.test_a.ATest" name="test_fail" file="tests/test_a.py"><failure message="x">tb</failure></testcase>`+
				`<testcase classname="tests.test_a.ATest" name="test_err" file="tests/test_a.py"><error>tb</error></testcase>`+
				`<testcase classname="tests.test_a.ATest" name="test_skip" file="tests/test_a.py"><skipped/></testcase>`+
				`<testcase classname="tests.test_a" name="test_function" file="tests/test_a.py"/>`+
				`<testcase classname="tests.test_a.Outer.Inner" name="test_nested" file="tests/test_a.py"/>`+
				`<testcase classname="agentbox.load" name="tests"><error>import failed</error></testcase>`),
			exit: 1,
			want: map[string]Outcome{
				"tests/test_a.py::ATest::test_pass":          OutcomePass,
				"tests/test_a.py::ATest::test_fail":          OutcomeFail,
				"tests/test_a.py::ATest::test_err":           OutcomeError,
				"tests/test_a.py::ATest::test_skip":          OutcomeSkip,
				"tests/test_a.py::test_function":             OutcomePass,
				"tests/test_a.py::Outer::Inner::test_nested": OutcomePass,
				"agentbox.load::tests":                       OutcomeError,
			},
		},
		{
			// A forged duplicate "pass" never hides the real failure.
			name: "worst outcome wins",
			data: doc(ok, `<testcase classname="t.C" name="a" file="t.py"/><testcase classname="t.C" name="a" file="t.py"><failure/></testcase><testcase classname="t.C" name="a" file="t.py"/>`),
			exit: 1,
			want: map[string]Outcome{"t.py::C::a": OutcomeFail},
		},
		{name: "clean run", data: doc(ok, `<testcase classname="t.C" name="a" file="t.py"/>`), want: map[string]Outcome{"t.py::C::a": OutcomePass}},
		{name: "testsuite root", data: []byte(`<testsuite agentbox-nonce="N0NCE"><testcase classname="t.C" name="a" file="t.py"/></testsuite>`), want: map[string]Outcome{"t.py::C::a": OutcomePass}},
		{name: "wrong nonce", data: doc(`agentbox-nonce="OTHER"`, `<testcase classname="t.C" name="a" file="t.py"/>`), err: "nonce"},
		{name: "no nonce", data: doc(``, `<testcase classname="t.C" name="a" file="t.py"/>`), err: "nonce"},
		{name: "runner reports tampering", data: doc(ok+` agentbox-error="code under test replaced: x"`, `<testcase classname="t.C" name="a" file="t.py"/>`), exit: 3, err: "runner reports: code under test replaced"},
		{name: "exit 0 but a failure", data: doc(ok, `<testcase classname="t.C" name="a" file="t.py"><failure/></testcase>`), exit: 0, err: "contradicts"},
		{name: "exit 1 but clean", data: doc(ok, `<testcase classname="t.C" name="a" file="t.py"/>`), exit: 1, err: "contradicts"},
		{name: "exit 0 and no tests", data: doc(ok, ``), exit: 0, err: "contradicts"},
		{name: "malformed", data: []byte(`<testsuites agentbox-nonce="N0NCE"><testcase`), err: "malformed XML"},
		{name: "wrong root", data: []byte(`<html agentbox-nonce="N0NCE"/>`), err: "root element"},
		{name: "nameless testcase", data: doc(ok, `<testcase classname="t.C"/>`), err: "without a name"},
		{name: "not XML", data: []byte("PASSED\n"), err: "no XML element"},
		{name: "empty file", data: []byte("\n"), err: "did not finish"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(JUnit, Output{ExitCode: tc.exit, ResultsFile: tc.data, Nonce: nonce})
			checkParse(t, r, err, tc.want, tc.err)
		})
	}
	t.Run("no file", func(t *testing.T) {
		_, err := Parse(JUnit, Output{ExitCode: 2, Nonce: nonce})
		checkParse(t, Results{}, err, nil, "no results file")
	})
}

func TestParseGoTestJSON(t *testing.T) {
	ev := func(action, pkg, test, output string) string {
		b, _ := json.Marshal(testEvent{Action: action, Package: pkg, Test: test, Output: output})
		return string(b) + "\n"
	}
	const p, q = "example.com/p", "example.com/q"
	tests := []struct {
		name string
		out  string
		exit int
		want map[string]Outcome
		err  string
	}{
		{
			name: "passes",
			out:  ev("run", p, "TestA", "") + ev("pass", p, "TestA", "") + ev("run", p, "TestA/sub", "") + ev("pass", p, "TestA/sub", "") + ev("skip", p, "TestB", "") + ev("pass", p, "", ""),
			want: map[string]Outcome{p + "::TestA": OutcomePass, p + "::TestA/sub": OutcomePass, p + "::TestB": OutcomeSkip},
		},
		{
			// The init forgery: a pass event printed before the real run's failure.
			name: "forged pass then real fail",
			out:  ev("pass", p, "TestA", "") + ev("run", p, "TestA", "") + ev("fail", p, "TestA", ""),
			exit: 1,
			want: map[string]Outcome{p + "::TestA": OutcomeFail},
		},
		{
			name: "one package fails, one passes",
			out:  ev("pass", p, "TestA", "") + ev("fail", q, "TestB", ""),
			exit: 1,
			want: map[string]Outcome{p + "::TestA": OutcomePass, q + "::TestB": OutcomeFail},
		},
		{name: "all pass, exit 1", out: ev("pass", p, "TestA", ""), exit: 1, err: "contradicts"},
		{name: "a failure, exit 0", out: ev("fail", p, "TestA", ""), err: "contradicts"},
		{name: "not JSON", out: "--- PASS: TestA (0.00s)\n", err: "not a test event"},
		{name: "build failure", out: ev("build-output", p, "", "x.go:1: syntax error\n") + ev("fail", p, "", ""), exit: 1, want: map[string]Outcome{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(GoTestJSON, Output{ExitCode: tc.exit, Stdout: []byte(tc.out), Nonce: "N0NCE"})
			checkParse(t, r, err, tc.want, tc.err)
			// The grader takes a contradiction for forgery when canaries are in.
			var re *ResultsError
			if (tc.err == "contradicts") != (errors.As(err, &re) && re.Contradiction) {
				t.Errorf("err %v: Contradiction set %v, want %v", err, re != nil && re.Contradiction, tc.err == "contradicts")
			}
		})
	}
}

func TestParseTAP(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want map[string]Outcome
		err  string
	}{
		{
			name: "mixed",
			out:  "TAP version 13\n1..6\nok 1 - adds\nnot ok 2 - subtracts\nok 3 # SKIP no network\nnot ok 4 - later # TODO\nok 5\n    ok 1 - a subtest\n# a comment\nok 6 multiplies\n",
			want: map[string]Outcome{"adds": OutcomePass, "subtracts": OutcomeFail, "3": OutcomeSkip, "later": OutcomeSkip, "5": OutcomePass, "multiplies": OutcomePass},
		},
		{name: "plan mismatch", out: "1..3\nok 1 - a\n", err: "planned 3"},
		{name: "empty plan", out: "1..\nok 1 - a\n", err: "bad or repeated plan"},
		{name: "repeated plan", out: "1..1\nok 1 - a\n1..1\n", err: "bad or repeated plan"},
		{name: "bail out", out: "1..2\nok 1 - a\nBail out! database down\n", err: "bailed out"},
		{name: "okay is not a test", out: "okay then\nok - a\n", want: map[string]Outcome{"a": OutcomePass}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(TAP, Output{Stdout: []byte(tc.out)})
			checkParse(t, r, err, tc.want, tc.err)
		})
	}
}

func TestParseExitCode(t *testing.T) {
	for code, want := range map[int]Outcome{0: OutcomePass, 1: OutcomeFail, 137: OutcomeFail} {
		r, err := Parse(ExitCode, Output{ExitCode: code})
		if err != nil || r.Outcome(ExitCodeID) != want {
			t.Errorf("exit %d: %v, %v; want %s", code, r.Tests, err, want)
		}
	}
	if _, err := Parse("xml", Output{}); err == nil {
		t.Error("Parse accepted an unknown format")
	}
}

func checkParse(t *testing.T, r Results, err error, want map[string]Outcome, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if !errors.Is(err, ErrResults) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Parse = %v, want ErrResults with %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := r.Tests
	if got == nil {
		got = map[string]Outcome{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
}
