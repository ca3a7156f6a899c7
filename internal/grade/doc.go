// Package grade decides whether an agent's patch resolves a task, independently of
// the agent: it checks the patch against the task's protected paths, applies it to
// a pristine copy of the task's repository in a fresh environment, copies the
// hidden tests in only then, runs the task's test command under the task's limits
// with a fresh nonce, and reads the verdict from the parsed results (package task).
//
// A patch that does not apply exactly gets the fallbacks of refit (recounted hunk
// headers, offsets, whitespace-insensitive matching, never dropped context), and
// the verdict says so (ApplyMethod "fuzzy", ApplyNotes); Options.StrictApply
// turns them off. Options.Reruns runs the tests again, each time in a fresh
// environment from the pristine repository with the patch applied again (nothing
// a run leaves behind reaches the next) and a fresh nonce, and reports tests
// whose outcome changed as flaky; each test counts by its worst outcome, so the
// same patch gets the same verdict. The output of every command goes to
// Options.LogFile.
//
// The verdict's soundness does not rest on reading the patch. The built-in tasks
// are judged out of process (package task): the checks never share a process with
// the code under test, and draw their inputs from Options.Seed, fresh for every
// grade unless given and recorded in Verdict.Seed. There is no lexical review of
// the patch: one that forgery cannot get around (by obfuscation, a binary hunk, or
// code the pristine repository already holds) would refuse honest fixes, which use
// sys.modules, inspect, os.Exit and init functions like any other code. A task
// graded by its own framework (go test -json, pytest, unittest) shares its
// process with the code under test and is checked with canaries instead (package
// canary): its hidden tests run twice, each copy in a fresh environment, each
// test a canary in one copy and itself in the other, and results a canary shows
// to be forged make the verdict tampered (Verdict.Forged).
//
// A grader step that fails after the patch was applied because the workspace is
// full (ENOSPC, EDQUOT) is the patch's doing: a problem naming the limit, not an
// infrastructure failure.
//
// Oracle checks a suite's tasks: each reference must resolve its task and the
// empty patch must not. It does not run agents or load suites (package task
// does). Infrastructure failures are reported in Verdict.InfraError and never as
// "not resolved".
package grade
