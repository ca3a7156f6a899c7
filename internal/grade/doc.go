// Package grade decides whether an agent's patch resolves a task, independently of
// the agent: it checks the patch against the task's protected paths, applies it to
// a pristine copy of the task's repository in a fresh environment, copies the
// hidden tests in only then, runs the task's test command under the task's limits
// with a fresh nonce, and reads the verdict from the parsed results (package task).
//
// It does not run agents, retry flaky tests (reruns), grade suites, or scan a
// patch for code that reaches for the test machinery; those are left to callers
// and later work. Infrastructure failures are reported in Verdict.InfraError and
// never as "not resolved".
package grade
