// Package eval runs an agent over a task suite and grades every attempt
// independently: each (task, attempt) gets a fresh environment for the agent's
// session (from the task's starting code, no network, the public test command as
// its test.run tool), the agent's final diff is taken from that environment, and
// package grade applies it to a pristine copy in another fresh environment with
// the hidden tests. The agent's own claim (task.finish) decides nothing. The agent
// is the built-in loop under a policy, or an external program (Options.AgentCmd)
// that works on its environment through an API and MCP server of its own, with a
// token reaching that one environment (AgentFile says what it is told).
//
// Results go to a directory: run.json (the run's identity), per attempt
// TASK/N/{trace.jsonl, events.jsonl, patch.diff, grade.json, test.log,
// attempt.json} (an external agent's agent.stdout and agent.stderr for the first
// two), and the reports of package report. run.json holds the flags of the run
// (Options.Flags); a resume under others is refused. attempt.json is written last,
// so a directory holds exactly the attempts that finished; Run with Resume skips
// those that the harness did not fail (no error, no infra error) and redoes the
// rest. Before anything is written, one empty environment is started and
// destroyed, so that a host without sandboxes fails once, saying why. Cancelling the context stops new attempts, destroys
// the environments of running ones and records none of them.
//
// It does not choose policies or load suites (the command line does), and it does
// not retry an attempt whose grading failed for the harness's reasons: that is
// reported as infra_error, apart from the agent's results.
package eval
