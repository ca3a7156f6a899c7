// Package canary detects forged test results from runs that cannot be protected:
// a project's own test framework (go test -json, pytest, unittest) runs the
// hidden tests in the process of the code under test, which can print or write
// whatever results it likes.
//
// Before such a run the grader makes two copies of the hidden test files, and
// runs each in an environment of its own made from the pristine repository. Every
// hidden test whose check can be inverted safely is a canary in one copy, chosen at
// random, and itself in the other: a copy whose one check is inverted, so that any
// implementation that passes the real test fails the canary. No run ever holds a
// test and its canary together, so there is no pair to compare: telling a canary
// from a real test takes knowing the original test. After both runs the results
// are read back together, and they are forged when a canary passed while the same
// test passed as it is in the other run, or when a canary went unreported while
// the test was reported as it is.
//
// Go (RewriteGo, Check): every hidden test gets a fresh random name in each copy
// (Go has no name-preserving way to tell the copies' results apart, and names the
// forger knows from the upstream test are then absent: a test reported under its
// original name is forged too); the canary inverts the test's last top-level if
// statement reached whenever the test passes (no return before it) whose body
// calls t.Error, t.Errorf, t.Fatal or t.Fatalf. The canary's condition is its exact
// negation (x != y becomes x == y and back; !c becomes c; De Morgan through && and
// ||; anything else !(c)), or, keeping the check's shape, x != L with the literal
// L moved to another value of its kind, alone or as a disjunct of an || chain (a
// passing test found every disjunct false, so x == L). Comments are dropped. A test without such a check is itself in both
// copies.
//
// Python (RewritePython, CheckPython): the hidden test modules (test_*.py,
// *_test.py) keep their names, comments and layout; an edit of one check's tokens
// makes the canary. It inverts a top-level statement of a test function (a
// module-level test_* function or a test_* method of a module-level class) that
// comes before any return: assert x == L with a number, string or bytes literal L
// perturbed in place (it reads like any check); else ==/!=, is/is not, in/not in
// swapped, assert not x to assert (x), anything else assert not (x); unittest's
// self.assertEqual(x, L) perturbed likewise, else the assertion swapped for its
// negation (assertEqual/assertNotEqual, assertTrue/assertFalse, assertIs,
// assertIsNone, assertIn, assertIsInstance, assertRegex, assertAlmostEqual and
// their negations). Each edit is verified by parsing the edited module and
// comparing the statement's syntax tree with the intended one. python3 -I -S does
// the parsing (ast); it never imports or runs what it reads. Expected failures
// (xfail, expectedFailure, at any level), generators and the methods of a class
// another class of the module derives from get no canary: an expected failure
// passes when a check fails, and a derived class would run the canary as its own
// test. A test's results, parametrized or not, are
// matched to it by the report's class path (junit classname, unittest's
// module.Class) and its function name.
//
// What makes a canary's failure certain: the inverted check is reached whenever
// the real test passes, and a passing real test found it true; the canary's check
// is its negation, provided the test is deterministic: a test whose outcome
// depends on time, scheduling, map or set order, or a random seed of its own can
// pass its canary too, and is then graded forged. So can a check whose == is
// looser than equality of values (an object equal to anything, such as
// mock.ANY, on the value's side), or a Python run with -O, which strips asserts.
// The other way round, a real test fails in the copy where a test it calls (a
// test function called as a helper, a base class in another module) is a
// canary: a false "unresolved", never a false pass.
//
// What it cannot see: a forger that knows the original hidden tests (an upstream
// test file is public) and compares; a forger that tells a canary from a real
// test by its shape alone (a Go check that reads like success, if got == want
// { t.Error }; a Python assert x != y), which works only when every canary of the
// run has such a shape, since literal perturbations have none (on native G01 half
// of them do: G01-canary-shape-reader); a forger that
// reports exactly the right outcome for every test (it then needs to know them);
// a forger that fails or leaves out the tests it cannot classify (it then fails
// real tests as well); tests that get no canary (checks only in loops, subtests,
// with blocks or after a return, or made by an assertion library such as
// quicktest's c.Assert or testify).
//
// Rewriting is parsing only, over the trusted hidden files: go/parser and
// go/printer for Go, Python's ast for Python; checking is pure.
package canary
