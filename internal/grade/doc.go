// Package grade decides whether an agent's patch resolves a task, independently of
// the agent: it checks the patch against the task's protected paths, applies it to
// a pristine copy of the task's repository in a fresh environment, copies the
// hidden tests in only then, runs the task's test command under the task's limits
// with a fresh nonce, and reads the verdict from the parsed results (package task).
//
// A patch that does not apply exactly gets the fallbacks of refit (recounted hunk
// headers, offsets, whitespace-insensitive matching, never dropped context), and
// the verdict says so (ApplyMethod "fuzzy", ApplyNotes); Options.StrictApply
// turns them off. Options.Reruns runs the tests again in the same environment
// with fresh nonces and reports tests whose outcome changed as flaky; each test
// counts by its worst outcome, so the same patch gets the same verdict. The output
// of every command goes to Options.LogFile.
//
// Code under test runs in the hidden tests' own process, so the grader also
// reviews what the patch adds: its added lines for the test machinery (scan.go),
// and for Go what package initialization reaches after it (goinit.go). Any
// finding is listed in Verdict.Suspicious and the patch is not resolved
// (Options.NoScan turns both off).
//
// Oracle checks a suite's tasks: each reference must resolve its task and the
// empty patch must not. It does not run agents or load suites (package task
// does). Infrastructure failures are reported in Verdict.InfraError and never as
// "not resolved".
package grade
