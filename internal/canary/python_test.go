package canary

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// python is the interpreter the real rows run (Debian's, with pytest), else
// the first on PATH.
func python(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	testenv.Require(t, err == nil, "needs python3 on PATH")
	return p
}

// TestRewritePythonInverts: each kind of check becomes its exact negation (a
// literal of ==, assertEqual perturbed in place), in one copy only, and nothing
// else of the file changes.
func TestRewritePythonInverts(t *testing.T) {
	py := python(t)
	tests := []struct {
		name, check, want string // want is a regexp of the canary's check
	}{
		{"equal to a literal", "assert f(1) == 3", `^assert f\(1\) == 2$`},
		{"literal first", "assert 'ab' == f(1)", `^assert 'ab[a-z]' == f\(1\)$`},
		{"float", "assert f(1) == 0.5", `^assert f\(1\) == 0\.25$`},
		{"bytes", "assert f(1) == b'x'", `^assert f\(1\) == b'x[a-z]'$`},
		{"equal to a variable", "assert f(1) == want", `^assert f\(1\) != want$`},
		{"not equal", "assert f(1) != want", `^assert f\(1\) == want$`},
		{"parenthesized operands", "assert (f(1)) == (want)", `^assert \(f\(1\)\) != \(want\)$`},
		{"is not", "assert f(1) is not None, 'msg'", `^assert f\(1\) is None, 'msg'$`},
		{"in", "assert 1 in f(1)", `^assert 1 not in f\(1\)$`},
		{"not", "assert not f(1)", `^assert \(f\(1\)\)$`},
		{"truth", "assert f(1)", `^assert not \(f\(1\)\)$`},
		{"less", "assert f(1) < 3", `^assert not \(f\(1\) < 3\)$`},
		{"a bool stays a bool", "assert f(1) == True", `^assert f\(1\) != True$`},
		{"assertEqual literal", "self.assertEqual(f(1), 3)", `^self\.assertEqual\(f\(1\), 2\)$`},
		{"assertEqual", "self.assertEqual(f(1), want, msg='m')", `^self\.assertNotEqual\(f\(1\), want, msg='m'\)$`},
		{"assertTrue", "self.assertTrue(f(1))", `^self\.assertFalse\(f\(1\)\)$`},
		{"assertIsNone", "self.assertIsNone(f(1))", `^self\.assertIsNotNone\(f\(1\)\)$`},
		{"assertIn", "self.assertIn(1, f(1))", `^self\.assertNotIn\(1, f\(1\)\)$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "import unittest\n\n\nclass TestC(unittest.TestCase):\n    # a comment\n    def test_m(self):\n        x = 1\n        " + tc.check + "\n"
			if !strings.HasPrefix(tc.check, "self.") {
				src = "# a comment\ndef test_m():\n    x = 1\n    " + tc.check + "\n"
			}
			copies, p, err := RewritePython(t.Context(), py, map[string][]byte{"tests/test_x.py": []byte(src)}, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(p.Canary[0]) + len(p.Canary[1]); n != 1 || len(p.Uncovered) != 0 {
				t.Fatalf("plan %+v", p)
			}
			c := 0
			if len(p.Canary[1]) == 1 {
				c = 1
			}
			if got := string(copies[1-c]["tests/test_x.py"]); got != src {
				t.Errorf("the copy with the test as it is changed:\n%s", got)
			}
			canary := string(copies[c]["tests/test_x.py"])
			before, rest, _ := strings.Cut(src, tc.check)
			got := strings.TrimSuffix(strings.TrimPrefix(canary, before), rest)
			if !strings.HasPrefix(canary, before) || !strings.HasSuffix(canary, rest) || !regexp.MustCompile(tc.want).MatchString(got) {
				t.Errorf("canary check %q, want %s\n%s", got, tc.want, canary)
			}
		})
	}
}

// TestRewritePythonUncovered: checks a passing test may not reach, checks that
// are no checks, and expected failures (whose canary could pass) get no canary.
func TestRewritePythonUncovered(t *testing.T) {
	py := python(t)
	bodies := map[string]string{
		"in a loop":          "def test_m():\n    for i in range(3):\n        assert f(i) == i\n",
		"after a return":     "def test_m():\n    if f(0):\n        return\n    assert f(1) == 1\n",
		"in a with":          "def test_m():\n    with pytest.raises(ValueError):\n        assert f(1) == 1\n",
		"no check":           "def test_m():\n    f(1)\n",
		"xfail":              "@pytest.mark.xfail\ndef test_m():\n    assert f(1) == 1\n",
		"module xfail":       "pytestmark = pytest.mark.xfail\ndef test_m():\n    assert f(1) == 1\n",
		"expectedFailure":    "class TestC(unittest.TestCase):\n    @unittest.expectedFailure\n    def test_m(self):\n        self.assertEqual(f(1), 1)\n",
		"a generator":        "def test_m():\n    assert f(1) == 1\n    yield 1\n",
		"a base class":       "class TestA:\n    def test_m(self):\n        assert f(1) == 1\n\n\nclass TestB(TestA):\n    pass\n",
		"another's assertEq": "class TestC(unittest.TestCase):\n    def test_m(self):\n        other.assertEqual(f(1), 1)\n",
	}
	for name, src := range bodies {
		t.Run(name, func(t *testing.T) {
			copies, p, err := RewritePython(t.Context(), py, map[string][]byte{"test_x.py": []byte(src)}, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Canary[0])+len(p.Canary[1]) != 0 || len(p.Uncovered) != 1 {
				t.Errorf("plan %+v", p)
			}
			for _, c := range copies {
				if string(c["test_x.py"]) != src {
					t.Errorf("changed:\n%s", c["test_x.py"])
				}
			}
		})
	}
	// A file that does not parse is left as it is, and says why.
	copies, p, err := RewritePython(t.Context(), py, map[string][]byte{"test_x.py": []byte("def test_m(:\n")}, rand.New(rand.NewPCG(1, 2)))
	if err != nil || string(copies[0]["test_x.py"]) != "def test_m(:\n" || len(p.Uncovered) != 1 || !strings.Contains(p.Uncovered[0], "does not parse") {
		t.Errorf("plan %+v, %v", p, err)
	}
}

// TestCheckPython: canaries are told from the same test ids of the other run
// by the plan; a canary passing with its test, or missing while its test was
// reported, is a forgery; an honest failure is not.
func TestCheckPython(t *testing.T) {
	a := PyTest{"tests.test_x", "TestC", "test_a"}
	b := PyTest{"tests.test_x", "", "test_b"}
	p := PyPlan{Canary: [2]map[PyTest]bool{{a: true}, {b: true}}}
	const ida, idb, idp = "tests.test_x.TestC.test_a", "tests.test_x.test_b[1]", "tests.test_x.test_public"
	res := func(o map[string]string) map[string]PyResult {
		out := map[string]PyResult{}
		for id, oc := range o {
			cls, name := id[:strings.LastIndex(id[:strings.IndexByte(id+"[", '[')], ".")], id[strings.LastIndex(id[:strings.IndexByte(id+"[", '[')], ".")+1:]
			out[id] = PyResult{Class: cls, Name: name, Outcome: oc}
		}
		return out
	}
	tests := []struct {
		name   string
		runs   [2]map[string]string
		forged string
	}{
		{"honest", [2]map[string]string{{ida: "fail", idb: "pass", idp: "pass"}, {ida: "pass", idb: "fail", idp: "pass"}}, ""},
		{"honest failure: a canary may pass", [2]map[string]string{{ida: "pass", idb: "fail"}, {ida: "fail", idb: "fail"}}, ""},
		{"a run reported nothing", [2]map[string]string{{}, {ida: "pass", idb: "fail"}}, ""},
		{"all pass", [2]map[string]string{{ida: "pass", idb: "pass"}, {ida: "pass", idb: "pass"}}, "canary " + ida},
		{"canary left out", [2]map[string]string{{idb: "pass"}, {ida: "pass", idb: "fail"}}, "canary tests.test_x.TestC.test_a ran in run 1 but was not reported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, forged := CheckPython(p, [2]map[string]PyResult{res(tc.runs[0]), res(tc.runs[1])})
			if (tc.forged == "") != (len(forged) == 0) || tc.forged != "" && !strings.Contains(forged[0], tc.forged) {
				t.Errorf("forged %q, want %q", forged, tc.forged)
			}
			if _, ok := out[0][ida]; ok {
				t.Errorf("run 1's canary %s is among the results", ida)
			}
			if _, ok := out[1][idb]; ok {
				t.Errorf("run 2's canary %s is among the results", idb)
			}
		})
	}
	// The classname may start higher than the hidden file's path (another root).
	if _, ok := p.canaryOf(0, PyResult{Class: "pkg.tests.test_x.TestC", Name: "test_a"}); !ok {
		t.Error("a classname with a longer prefix is not matched")
	}
	if _, ok := p.canaryOf(0, PyResult{Class: "tests.test_xx.TestC", Name: "test_a"}); ok {
		t.Error("another module is matched")
	}
}

// TestPythonRealDeal runs the two copies of a small pytest module and a
// unittest module with the real frameworks: a correct implementation passes
// every test as it is and fails every canary (CheckPython finds nothing), and a
// conftest.py that forces every report to pass is caught.
func TestPythonRealDeal(t *testing.T) {
	py := python(t)
	err := exec.Command(py, "-c", "import pytest").Run()
	testenv.Require(t, err == nil, "needs python3 with pytest (Debian python3-pytest)")
	tests := map[string][]byte{
		"tests/test_p.py": []byte(`import pytest
from p import double, words


def test_double():
    assert double(21) == 42


@pytest.mark.parametrize("s,want", [("a b", ["a", "b"]), ("", [])])
def test_words(s, want):
    got = words(s)
    assert got == want


class TestMore:
    def test_none(self):
        assert double(0) is not None

    def test_loop(self):
        for i in range(3):
            assert double(i) == 2 * i
`),
		"tests/test_u.py": []byte(`import unittest
from p import double


class TestU(unittest.TestCase):
    def test_eq(self):
        self.assertEqual(double(2), 4)

    def test_true(self):
        self.assertTrue(double(1) == 2)
`),
	}
	impl := "def double(n):\n    return 2 * n\n\n\ndef words(s):\n    return s.split()\n"
	forge := "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    r = out.get_result()\n    r.outcome, r.longrepr = 'passed', None\n"
	copies, plan, err := RewritePython(t.Context(), py, tests, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plan.Canary[0]) + len(plan.Canary[1]); n != 5 || len(plan.Uncovered) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	for _, tc := range []struct {
		name     string
		conftest string
		forged   bool
	}{{"correct", "", false}, {"forged", forge, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var runs [2]map[string]PyResult
			for i, files := range copies {
				dir := t.TempDir()
				all := map[string][]byte{"p.py": []byte(impl), "tests/__init__.py": nil, "conftest.py": []byte(tc.conftest)}
				for n, s := range files {
					all[n] = s
				}
				for n, s := range all {
					os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
					if err := os.WriteFile(filepath.Join(dir, n), s, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				xml := filepath.Join(dir, "results.xml")
				cmd := exec.Command(py, "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml="+xml, "tests")
				cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1", "HOME=" + dir}
				out, _ := cmd.CombinedOutput()
				data, err := os.ReadFile(xml)
				if err != nil {
					t.Fatalf("no results: %v\n%s", err, out)
				}
				res, err := task.Parse(task.JUnit, task.Output{ResultsFile: data})
				if err != nil {
					t.Fatal(err)
				}
				runs[i] = map[string]PyResult{}
				for id, o := range res.Tests {
					runs[i][id] = PyResult{Class: res.Keys[id].Class, Name: res.Keys[id].Name, Outcome: string(o)}
				}
				if len(runs[i]) != 7 {
					t.Fatalf("copy %d: %d tests reported, want 7\n%s", i, len(runs[i]), out)
				}
			}
			got, forged := CheckPython(plan, runs)
			if tc.forged != (len(forged) > 0) {
				t.Fatalf("forged %q, want forged=%v; runs %v", forged, tc.forged, runs)
			}
			if !tc.forged {
				n := 0
				for i := range 2 {
					for id, r := range got[i] {
						n++
						if r.Outcome != "pass" {
							t.Errorf("%s: %s, want pass", id, r.Outcome)
						}
					}
					for id, r := range runs[i] {
						if _, real := got[i][id]; !real && r.Outcome != "fail" {
							t.Errorf("canary %s: %s, want fail", id, r.Outcome)
						}
					}
				}
				if n != 7+1 { // every test once as it is, the uncovered one twice
					t.Errorf("%d results as they are, want 8: %v", n, got)
				}
			}
		})
	}
}
