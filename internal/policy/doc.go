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
// # Where it is enforced
//
// Package tool asks a Gate for every call of a registry (Registry.Call: scope →
// schema → Describe → the gate's Decide → precondition → charge → handler), so a
// refused or pending call touches nothing and costs nothing; each built-in Spec's
// Describe fills the Action (fs.read, fs.list, fs.search: Reads; fs.write,
// patch.apply: Writes and Deletes, as workspace.PatchFiles reads a diff;
// fs.remove: a write and deletion of its path, of "dir/**" for a directory; exec.run,
// test.run: Command and Network; http.fetch: URL, Method, Payload); a mounted MCP
// tool is its Server's, with its hints untrusted and its arguments as Payload.
// agent.Permissions is the gate: it holds the session's Policy, grant.Set and
// taint.State, and after an allowed call spends its one-time grants and taints
// the session with what the result holds. The agent loop turns an ask into
// grant.Requests, asks its Approver (agent.ApprovalsFile for `--approvals`),
// records the answers and calls again under the same call id; an unanswered
// request ends the session with policy_stop, or is refused where the run says
// (eval: PermissionConfig.Unanswered grant.Refuse). agent.RunSession wires it
// for agent and eval alike. Package trace records CallDecided
// (the Verdict with every need's Risk), ApprovalRequested, ApprovalResolved,
// TaintAdded and InjectionFlagged in a hash-chained log. agent.Mount registers
// only the tools of an external MCP server (agent.ConnectMCP, `agent --mcp`)
// whose pins (package pin) match. Not wired yet: Verdict.Confine (the
// environment's egress is not narrowed per call), goal steering (Set.Steer) and subagents
// (Set.Fork, taint.State.Fork and Merge), a person's live answer.
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
