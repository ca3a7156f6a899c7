// Package agent is the coordinator's loop: it asks a Policy for the next action,
// runs it through the tools, feeds the result back as an observation, records
// everything as events, and stops for a reason it can name.
//
// Budgets — steps, tool calls, model input and output tokens, money, wall time —
// are spent before the action they pay for: a step before the policy is asked, a
// tool call before the tool runs, and a model request's tokens and cost are
// reserved from an estimate before it is sent and settled with the provider's
// figures after. A session stops with done, max_steps, max_tool_calls,
// budget_exhausted, no_progress, model_error, cancelled or policy_stop.
// No-progress is detected from fingerprints of (action, observation, workspace
// version): the same fingerprint Limits.NoProgressWindow times in a row, an A-B-A-B
// alternation, or the same error Limits.RepeatedErrors times in a row.
//
// RunSession is one session from start to end: the environment and its built-in
// tools made (tool.OpenEnv, with http.fetch when the session has egress), further
// tools mounted, the loop run, the final diff taken, the environment destroyed;
// `agentbox agent` and each eval attempt run one, with the same permission layer.
//
// Permissions are the session's policy, grants and taint, and the Gate of its
// registry, which decides every call before it runs (not access.Guard, the API's
// tenant check). When the verdict is ask, the loop groups the asks into approval
// requests, asks the Approver (a person at the terminal, an approvals file for
// runs without one), records the grants and makes the same call again; a request
// nobody answers ends the session with policy_stop, or, where the run says so
// (eval: nobody is there), is refused and the session goes on, never a silent
// allow. A durable session's Mailbox pauses it on an ask (the call has not run)
// until a person's answer is left in the journal (AnswerRequest; an MCP client's
// elicitation through InputRequests and AnswerInputs), and resume continues the
// held call. Mount mounts only the MCP tools whose definitions match their pins.
// DelegateTool runs a subagent in the same environment under the session's
// permissions forked (Permissions.Fork): delegation launders neither taint nor
// grants.
//
// A durable session (RunDurable, RunSession with a journal.Store) commits each
// event to its journal before acting on it, records each call's effect
// fingerprint and the diff that re-derives the workspace, and when resumed
// recovers before any new action (recover.go): every call left without a result
// gets a verdict by its recovery capability, and one whose outcome nobody can
// tell pauses the session until a person resolves it (Resolve).
//
// Policies: Scripted (seed 002's deterministic modes good, loop and escape,
// seed 004's combined attack, exfil, and the crash campaign's long session), Sequence (a fixed list of actions), and
// ModelPolicy, which drives an OpenAI- or Anthropic-protocol model through
// package model with the tools offered as tool definitions and their results
// returned as untrusted data. Replay re-drives a recorded trace through the same
// loop with the recorded results and no side effects.
//
// It deliberately does not touch code or files itself (only tools do, and the
// built-in ones only through the environment API; the event log's sinks are the
// caller's writers), hold API keys (cmd/ builds the
// model client), run tool calls in parallel, summarise or compact the history
// beyond what model.TrimOnOverflow does, or store events itself (package journal does).
package agent
