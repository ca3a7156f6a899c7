package task

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The files of testdata/results are real reports: pytest 7.2's junit (xunit1) of
// pytest-xunit1.py.txt, and Python 3.11's `python -m unittest -v` log of
// unittest-py311.py.txt.

// TestParsePytestJUnit: the testcases of pytest's own report get pytest's node
// ids, parametrized and nested classes included, and pytest's outcomes; without a
// nonce (a native framework) neither the missing agentbox-nonce attribute nor the
// exit status rejects it.
func TestParsePytestJUnit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "results", "pytest-xunit1.xml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(JUnit, Output{ExitCode: 1, ResultsFile: data})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{
		"tests/test_sample.py::test_param[1-2]":                   OutcomePass,
		"tests/test_sample.py::test_param[a::b-c.d]":              OutcomePass,
		"tests/test_sample.py::test_param[3-3]":                   OutcomeFail,
		"tests/test_sample.py::TestOuter::TestInner::test_nested": OutcomePass,
		"tests/test_sample.py::TestOuter::test_method":            OutcomeFail,
		"tests/test_sample.py::TestOuter::test_skipped":           OutcomeSkip,
		"tests/test_sample.py::CaseTest::test_err":                OutcomeFail,
		"tests/test_sample.py::CaseTest::test_ok":                 OutcomePass,
		"tests/test_sample.py::test_xfail":                        OutcomeSkip, // pytest reports xfail as skipped
	}
	if diff := cmp.Diff(want, res.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
	// The same report with a nonce is a witnessed task's, and is refused.
	if _, err := Parse(JUnit, Output{ExitCode: 1, ResultsFile: data, Nonce: "N"}); err == nil {
		t.Error("a report without agentbox-nonce was accepted for a witnessed run")
	}
}

// TestParseUnittestVerbose: unittest's verbose log, with a docstring line, a
// test's own output between its name and its result, a subtest failure, skips and
// expected failures, and the failure report at the end.
func TestParseUnittestVerbose(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "results", "unittest-py311.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(Unittest, Output{ExitCode: 1, Stderr: data})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{
		"tests.test_ut.UTTest.test_err":   OutcomeError,
		"tests.test_ut.UTTest.test_fail":  OutcomeFail,
		"tests.test_ut.UTTest.test_noisy": OutcomePass,
		"tests.test_ut.UTTest.test_ok":    OutcomePass,
		"tests.test_ut.UTTest.test_skip":  OutcomeSkip,
		"tests.test_ut.UTTest.test_sub":   OutcomeFail,
		"tests.test_ut.UTTest.test_xfail": OutcomePass,
	}
	if diff := cmp.Diff(want, res.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}

	// Before Python 3.11 the parentheses hold module.Class only, as Django prints it.
	old := "test_a (app.tests.ATest) ... ok\ntest_b (app.tests.ATest)\nDoc line. ... FAIL\n" +
		"test_c (app.tests.ATest) ... printed\nERROR\n\n======\nFAIL: test_b (app.tests.ATest)\n"
	res, err = Parse(Unittest, Output{ExitCode: 1, Stderr: []byte(old)})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]Outcome{"app.tests.ATest.test_a": OutcomePass, "app.tests.ATest.test_b": OutcomeFail, "app.tests.ATest.test_c": OutcomeError}
	if diff := cmp.Diff(want, res.Tests); diff != "" {
		t.Errorf("pre-3.11 log (-want +got):\n%s", diff)
	}
}

// TestParseTestKey: the id forms of SWE-bench datasets reduce to the same key as
// the results they name.
func TestParseTestKey(t *testing.T) {
	for id, want := range map[string]TestKey{
		"tests/test_x.py::TestC::test_m":               {"tests.test_x.TestC", "test_m"},
		"tests/test_x.py::test_f":                      {"tests.test_x", "test_f"},
		"tests/test_x.py::A::B::test_n[p::q-1.5]":      {"tests.test_x.A.B", "test_n[p::q-1.5]"},
		"test_m (tests.test_x.TestC)":                  {"tests.test_x.TestC", "test_m"},
		"test_m (tests.test_x.TestC.test_m)":           {"tests.test_x.TestC", "test_m"},
		"tests.test_x.TestC.test_m":                    {"tests.test_x.TestC", "test_m"},
		"TestNumber":                                   {"", "TestNumber"},
		"adds two numbers":                             {"", "adds two numbers"},
		"test_unicode_validator (auth_tests.test_v.U)": {"auth_tests.test_v.U", "test_unicode_validator"},
	} {
		got, ok := ParseTestKey(id)
		if !ok || got != want {
			t.Errorf("ParseTestKey(%q) = %+v, %v; want %+v", id, got, ok, want)
		}
	}
	// A Go id with its import path names one package's test: only itself matches.
	if k, ok := ParseTestKey("github.com/spf13/cast::TestNumber"); ok {
		t.Errorf("ParseTestKey of a Go id = %+v, true; want false", k)
	}
}

// TestFindMapsIDs: ids in pytest, Django and dotted forms find the results of
// pytest's report and of unittest's log; an id no test reported is missing (not
// failed); a bare Go test name finds its package's test.
func TestFindMapsIDs(t *testing.T) {
	junit, err := os.ReadFile(filepath.Join("testdata", "results", "pytest-xunit1.xml"))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Parse(JUnit, Output{ResultsFile: junit})
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join("testdata", "results", "unittest-py311.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ur, err := Parse(Unittest, Output{Stderr: log})
	if err != nil {
		t.Fatal(err)
	}
	goOut := `{"Action":"pass","Package":"example.com/m","Test":"TestA"}
{"Action":"fail","Package":"example.com/m","Test":"TestB/sub"}
{"Action":"fail","Package":"example.com/m","Test":"TestB"}
`
	gr, err := Parse(GoTestJSON, Output{ExitCode: 1, Stdout: []byte(goOut)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		res  Results
		want map[string]Outcome // ids absent here must be missing
		miss []string
	}{
		{"pytest", pr, map[string]Outcome{
			"tests/test_sample.py::TestOuter::test_method":            OutcomeFail,
			"tests/test_sample.py::test_param[a::b-c.d]":              OutcomePass,
			"test_ok (tests.test_sample.CaseTest)":                    OutcomePass,
			"test_err (tests.test_sample.CaseTest.test_err)":          OutcomeFail,
			"tests.test_sample.TestOuter.TestInner.test_nested":       OutcomePass,
			"tests/test_sample.py::TestOuter::TestInner::test_nested": OutcomePass,
		}, []string{"tests/test_sample.py::test_gone", "tests/test_other.py::test_param[1-2]", "test_ok (tests.test_sample.Other)"}},
		{"unittest", ur, map[string]Outcome{
			"test_fail (tests.test_ut.UTTest)":       OutcomeFail,
			"test_ok (tests.test_ut.UTTest.test_ok)": OutcomePass,
			"tests/test_ut.py::UTTest::test_skip":    OutcomeSkip,
			"tests.test_ut.UTTest.test_noisy":        OutcomePass,
		}, []string{"test_missing (tests.test_ut.UTTest)"}},
		{"go", gr, map[string]Outcome{
			"example.com/m::TestA": OutcomePass,
			"TestA":                OutcomePass,
			"TestB":                OutcomeFail,
		}, []string{"TestC", "other.com/m::TestA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := append(mapKeys(tc.want), tc.miss...)
			got := tc.res.Find(ids)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
		})
	}
}

func mapKeys(m map[string]Outcome) []string {
	var keys []string
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	return keys
}

// TestDetect: the framework comes from the project's configuration and tests.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		tests map[string]string
		want  Framework
	}{
		{"go module", map[string]string{"go.mod": "module x\n", "setup.cfg": "[tool:pytest]\n"}, nil, GoTest},
		{"node package", map[string]string{"package.json": "{}"}, nil, NodeTest},
		{"pytest.ini", map[string]string{"pytest.ini": ""}, nil, Pytest},
		{"setup.cfg", map[string]string{"setup.cfg": "[metadata]\n[tool:pytest]\ntestpaths = tests\n"}, nil, Pytest},
		{"tox.ini", map[string]string{"tox.ini": "[tox]\n[pytest]\n"}, nil, Pytest},
		{"pyproject", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\n"}, nil, Pytest},
		{"conftest", map[string]string{"tests/conftest.py": ""}, nil, Pytest},
		{"test imports pytest", map[string]string{"setup.py": ""}, map[string]string{"tests/test_a.py": "import pytest\n"}, Pytest},
		{"unittest", map[string]string{"setup.py": "", "tox.ini": "[tox]\ncommands = nose2\n"}, map[string]string{"tests/test_a.py": "import unittest\n"}, PyUnittest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if s, ok := tc.files[name]; ok {
					return []byte(s), nil
				}
				return nil, os.ErrNotExist
			}
			tests := map[string][]byte{}
			for k, v := range tc.tests {
				tests[k] = []byte(v)
			}
			got := Detect(read, mapKeysS(tc.files), tests)
			if got.Framework != tc.want || got.Reason == "" {
				t.Errorf("Detect = %+v, want %s with a reason", got, tc.want)
			}
		})
	}
}

func mapKeysS(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// TestReadSpecs: a specs file maps repositories and versions to specs; mistakes
// are named.
func TestReadSpecs(t *testing.T) {
	good := `pallets/jinja:
  "3.1":
    framework: pytest
    env: [PYTHONPATH=src]
    timeout: 10m
  "*":
    framework: command
    test_command: [make, check]
    result_format: tap
`
	s, err := ReadSpecs(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if sp, ok := s.lookup("pallets/jinja", "3.1"); !ok || sp.Framework != Pytest || sp.Env[0] != "PYTHONPATH=src" || sp.Timeout != "10m" {
		t.Errorf("3.1 = %+v, %v", sp, ok)
	}
	if sp, ok := s.lookup("pallets/jinja", "2.0"); !ok || sp.Framework != Command {
		t.Errorf("2.0 = %+v, %v; want the * spec", sp, ok)
	}
	if _, ok := s.lookup("other/repo", "1"); ok {
		t.Error("a spec for an unlisted repository")
	}
	for name, tc := range map[string]struct{ yaml, msg string }{
		"unknown field": {"a/b:\n  \"1\":\n    framwork: pytest\n", "framwork"},
		"bad repo":      {"jinja:\n  \"1\": {}\n", "owner/name"},
		"bad framework": {"a/b:\n  \"1\":\n    framework: nose\n", `framework "nose"`},
		"command alone": {"a/b:\n  \"1\":\n    framework: command\n", "needs test_command"},
		"bad format":    {"a/b:\n  \"1\":\n    framework: pytest\n    result_format: go-test-json\n", "needs language go"},
		"bad timeout":   {"a/b:\n  \"1\":\n    timeout: soon\n", "timeout"},
		"reserved env":  {"a/b:\n  \"1\":\n    env: [PATH=/x]\n", "set by the grader"},
	} {
		if _, err := ReadSpecs(strings.NewReader(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: ReadSpecs = %v, want an error with %q", name, err, tc.msg)
		}
	}
}
