// Package canary detects forged test results from runs that cannot be protected:
// a project's own test framework runs the hidden tests in the process of the code
// under test, which can print or write whatever results it likes.
//
// Before such a run the grader rewrites the hidden test files (RewriteGo): every
// hidden test gets a fresh random name, and next to each, where one can be made
// safely, goes a canary, a copy under another random name whose one check is
// inverted, so that any implementation that passes the real test fails the canary.
// Real and canary differ in one token and their names; a pair's order is random.
// After the run Check maps the results back to the original names and reports a
// forgery when a canary passed along with its real test, when a canary or a renamed test is missing from
// results that show tests passing, or when a test is reported under a hidden test's
// original name (which no longer exists in the run).
//
// What makes a canary's failure certain: the inverted check is a top-level if
// statement of the test, reached whenever the test passes (no return before it),
// whose body calls the test's t.Error, t.Errorf, t.Fatal or t.Fatalf. A passing
// real test evaluated its condition to false; the canary's condition is its exact
// negation (x != y becomes x == y and back; !c becomes c; anything else !(c)), or
// x != L with the literal L moved to another value of its kind, so it is true and
// the canary fails, provided the test is deterministic: a test whose outcome
// depends on time, scheduling, map order or a random seed of its own can pass its
// canary too, and is then graded forged. Tests whose checks all sit in loops,
// subtests or after a return get no canary (Plan.Uncovered).
//
// What it cannot see: a forger that tells canaries from real tests, by reading the
// rewritten test files at run time (the perturbed token of a pair is visible; with
// public knowledge of the original test, so is which one is real), or by running
// the tests itself and reporting only the ones that fail for every implementation;
// a forger that reports exactly the right outcome for every test.
//
// It does not run anything: rewriting is pure (go/parser and go/printer over the
// trusted hidden files), and so is checking.
package canary
