// Package policy decides whether a tool call may run: allow, ask a person, or deny.
// It is the policy layer of seed 004's nine: it decides by effect, path, host and
// command, never by what the model was persuaded of, and the sandbox below it
// contains what it lets through.
//
// # Policy as data
//
// A policy is a file (Parse, YAML or JSON, version 1, strict: an unknown field, a
// repeated key, a wrong type or a bad pattern is an *Error naming the rule, line
// and field) or a value (New, for the API). Its rules match a need on:
//
//	tools, servers   tool names and MCP server ids ('*' globs)
//	effect           read, write, exec, network, control
//	paths            workspace path globs with ** (PathGlob)
//	domains          egress's host patterns: NAME, *.SUFFIX, :PORT, preset:NAME, * (DomainPattern)
//	commands         argv patterns, through shells and wrappers (package command)
//	data             public, project, secret, credential (package secret)
//	hints            MCP annotations: read_only, destructive, idempotent, open_world
//	network          whether an exec's sandbox can reach the network
//
// and decide allow, ask (every_time: no session grant covers it) or deny
// (grantable: a grant lifts it). Of the rules that match, deny wins over ask, ask
// over allow, whatever their order. Default is the built-in policy (default.yaml,
// DefaultText prints it): seed 004's defaults — project reads and workspace writes
// allowed (the diff shown), .env, .ssh/, cloud credentials and key files refused
// unless sensitive:read is granted, .git internals, mass deletion and history
// rewrites asked, dependency installs with network asked, push, publish and deploy
// asked every time, sending data beyond the sandbox asked with the host and the
// data class shown.
//
// # Needs, grants and the risk function
//
// Decide breaks a call (Action) into needs, one target of one kind each (Need: a
// path read or written, a sensitive path read, a program run, a host reached, a
// tool called, data released), decides each, and the strictest decision is the
// call's (Verdict). A person grants capabilities, not commands (Capability:
// "write:src/**", "network:registry.npmjs.org", "exec:go test **"), through the
// Grants a Context carries; a need no rule matches is decided by the risk
// function (Assess) over the eight inputs of seed 004:
//
//	effect, target scope, reversibility, data sensitivity, network destination,
//	the user's stated intent, sandbox strength, grants held
//
// score = effect + scope + reversibility + sensitivity + destination + 3 ×
// sensitivity factor × destination factor + sandbox + intent − 30 if granted,
// clamped to 0..100; allow below 35, ask below 90, deny from 90; at least ask
// for an irreversible need and for secret data that can reach a network. The
// weights are in risk.go; TestRiskTable is the documented table and
// TestRiskMonotone proves that moving any input towards danger never lowers the
// decision. Every Judgement records its Risk with its inputs and terms, whichever
// rule decided.
//
// # Taint
//
// A Context carries the session's taint (package taint). In a tainted session,
// and for any call whose payload holds a secret's shape, each outgoing need (a
// host reached by a network tool or by a command with network, an open-world MCP
// tool) also needs a release of each tainted class to its destination; no rule
// allows a release, only a one-time grant for that call does. A command with
// network whose destination the policy cannot name is marked Confine: its
// sandbox's egress must allow only released hosts while it runs.
//
// # Integration (issue 18's next round, after issue 11's refactor)
//
// The packages of this round are pure; wiring them in touches package tool,
// agent, trace, egress, model, api, mcp and cmd at these points:
//
//  1. tool.Spec gains Describe func(ctx, args) (policy.Action, error), filled by
//     each built-in: fs.read → Reads [path], fs.list and fs.search → Reads [root],
//     fs.write → Writes [path], patch.apply → Writes the patch's files and Deletes
//     its deletions, exec.run → Command (command.Parse of argv, or ParseShell of
//     command) and Network (the environment's egress allows a host), test.run →
//     Command of the configured test command, task.finish → Effect control,
//     artifact.read → Reads of the artifact's source path, http.fetch → URL,
//     Method, Payload (headers and body), tool.FromMCP → Server, Hints (never
//     Trusted) and Payload (the arguments). Paths are resolved inside the
//     workspace (links followed by workspace.Root) before the policy sees them.
//  2. Registry.Call consults the policy after the schema and before the
//     precondition: scope → schema → Describe → Decide → precondition → charge →
//     handler. After the schema, so the policy judges validated arguments; before
//     the precondition and the charge, so a refused or pending call touches
//     nothing and costs nothing. Registry Options gain a Gate (an interface
//     package tool declares: Decide(call, action) Verdict; Observe(call, verdict,
//     envelope)); deny is EPERM with Verdict.Reason(); ask returns the Outcome
//     with Verdict set and the handler not run; allow runs the handler, spends
//     the one-time grants (grant.Set.Spend) and calls Observe.
//  3. The agent loop (step, after Tools.Call): while the Outcome's Verdict is
//     ask, it turns the asks into requests (grant.Items, grant.Group), emits
//     ApprovalRequested per request, waits on an Approver (an interface in
//     package agent: the approvals file, a terminal prompt, the API's `agentbox
//     sessions approve|deny ID REQ`, an MCP elicitation where the client
//     supports one), emits ApprovalResolved, records the answer
//     (grant.Set.Resolve) and calls the tool again under the same call id. An
//     unanswered request (grant.Approvals.Answer false, Unanswered stop) ends the
//     session with policy_stop naming the request; a denied one returns EPERM to
//     the model. Waiting spends wall time only, never a step or a tool call.
//  4. Events (package trace): CallDecided (the Verdict, with every need's Risk
//     and its inputs, and the goal revision) for every call before
//     ToolExecutionStarted; ApprovalRequested (grant.Request) and
//     ApprovalResolved (grant.Answer, the grants given); GrantDropped (on a steer,
//     grant.Set.Steer); TaintAdded (taint.Label, after ToolExecutionFinished);
//     InjectionFlagged (injection.Flag, with call and source); ToolPinned and
//     ToolRefused (pin.Check). trace.Event gains prev_hash and hash, sealed by a
//     chain.Chain inside Log.Emit under its lock; the session's last hash is its
//     anchor (printed by agent, kept in attempt.json); `agentbox trace verify
//     FILE [--anchor H]` runs chain.Verify. `trace stats` counts per session:
//     requests (interruptions), items approved and denied (approval and denial
//     rates), policy denials.
//  5. Taint and egress: after each allowed call, Observe feeds taint.State with
//     the rendered result (what the model reads), Sensitive set from
//     Verdict.Sensitive. When the session first becomes tainted, the session's
//     egress.Proxy gets SetPolicy with Allow emptied (deny all, which cuts open
//     connections); a call with Verdict.Confine gets Allow set to the hosts of
//     its released needs for the handler's duration, then emptied again. The
//     proxy scans plain-HTTP requests with secret.Scan (CONNECT tunnels are end
//     to end and cannot be); http.fetch's request is built on the host, where
//     Decide has already scanned its payload.
//  6. http.fetch (new tool, Effect network, scope "network"): input {url (http or
//     https), method (GET default), headers (no Host, Proxy-* or hop-by-hop),
//     body (≤ 1 MiB), timeout_seconds}; output {status, content_type, bytes,
//     truncated, location}; the body as Text, capped, binary bodies as artifacts;
//     Source url:<url>. No redirects are followed: a 3xx comes back with its
//     location and a next call is decided anew. It sends through a host-side
//     egress.Proxy with the session's egress policy, so the allowlist, address
//     checks, placeholder secrets and the connection log are the proxy's; agent
//     and eval take run's network flags to set it.
//  7. MCP: tools of external servers (`agent --mcp NAME=CMD`) are listed and
//     judged by pin.Store.CheckAll (pins in <state>/pins.json); usable ones are
//     registered with tool.FromMCP, the others become an ApprovalRequested of
//     kind pin showing pin.Check's diff or flags, registered after the grant.
//  8. Grants and goals: the session holds a grant.Set (policy.Context.Grants), the
//     approvals file's Upfront capabilities and `--grant CAP` given at start; a
//     steer calls Set.Steer. A subagent gets grant.Set.Fork and taint.State.Fork;
//     its taint is merged back (taint.State.Merge) when it ends.
//  9. Provenance: model.ToolResult.Provenance gains a Kind (provenance.Legacy of
//     the envelope's source until tools set one); the system prompt is built only
//     from the operator's goal and provenance.Notice, never from a result.
//
// # What it does not do
//
// It does not run, read or resolve anything: it judges names as the call gives
// them (a symlink named "notes" that points at .env is "notes": the tool must
// resolve paths before the policy sees them, and the taint from content catches
// what names miss). It keeps no state: grants, taint and approvals belong to the
// session (packages grant and taint). It does not ask anyone: an ask is a
// Verdict the agent loop turns into an ApprovalRequested event.
package policy
